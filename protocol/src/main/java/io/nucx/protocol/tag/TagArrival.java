package io.nucx.protocol.tag;

/**
 * A message that arrived, or began to, before any receive wanted it (an entry of UCX's unexpected queue): whole
 * eager data, an eager message still arriving, or a rendezvous request whose data wait at the sender. The protocol
 * that made it knows how to hand it to a receive; the {@link TagMatcher} only decides which receive.
 */
public abstract class TagArrival {

    private final long tag;
    /** Taken through one of the matcher's queues, or withdrawn; dropped lazily from the other. */
    boolean consumed;

    protected TagArrival(long tag) {
        this.tag = tag;
    }

    public final long tag() {
        return tag;
    }

    /** A posted receive takes this message: deliver it now, or as its data complete. Loop only. */
    protected abstract void matched(TagReceive receive);

    /** Nobody will receive it (the worker closes): release what it holds. Loop only. */
    protected abstract void discard();
}
