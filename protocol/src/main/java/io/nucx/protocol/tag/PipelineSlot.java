package io.nucx.protocol.tag;

/**
 * The place of a tagged message in its endpoint's pipeline order, taken when the message's first frame (or its RTS)
 * arrives and filled when its last byte has: a codec fires the slot up the pipeline at once and completes it later,
 * so {@link TagOrder} can hold back the messages behind it. Loop only.
 */
public final class PipelineSlot {

    private TagMessage message;
    private boolean done;
    /** The order that waits for this slot; null until it queued the slot. */
    private TagOrder order;
    /** The pipeline went away: whatever completes now is released. */
    private boolean detached;

    /** The message is whole; owns it. */
    public void complete(TagMessage m) {
        if (done || detached) {
            m.release();
            return;
        }
        message = m;
        done = true;
        if (order != null) {
            order.slotDone();
        }
    }

    /** The message will never be whole (its endpoint ended, it was dropped): its place is given up. */
    public void abort() {
        if (done) {
            return;
        }
        done = true;
        if (order != null && !detached) {
            order.slotDone();
        }
    }

    boolean isDone() {
        return done;
    }

    /** Hands over the message (null if given up). */
    TagMessage take() {
        TagMessage m = message;
        message = null;
        return m;
    }

    void attach(TagOrder o) {
        order = o;
    }

    void detach() {
        detached = true;
        order = null;
        TagMessage m = take();
        if (m != null) {
            m.release();
        }
    }
}
