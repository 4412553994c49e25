package io.nucx.protocol.stream;

import io.netty.buffer.ByteBuf;
import io.nucx.transport.Buffers;
import io.nucx.transport.ShortPayload;

/**
 * The place of one stream write in its endpoint's stream, taken when the write's first frame (or its STREAM_RTS)
 * arrives and filled when its last byte has: the carrying codec fires the slot up the pipeline at once and
 * completes it later, so the {@link StreamCodec} delivers the writes in the order the peer made them, whatever
 * protocol carried each. Loop only.
 */
public final class StreamSlot {

    private ByteBuf data;
    private boolean done;
    /** The codec whose stream holds this slot; null until it took the slot. */
    private StreamCodec owner;
    /** The stream went away: whatever completes now is released. */
    private boolean detached;
    /** Made by the codec for short writes it gathers ({@link #gathering}): its own, reused once delivered. */
    private boolean gathers;

    /** A slot whose write arrived whole (one frame). Owns {@code data}. */
    public static StreamSlot whole(ByteBuf data) {
        StreamSlot s = new StreamSlot();
        s.data = data;
        s.done = true;
        return s;
    }

    /** A whole slot for the short writes a codec gathers into {@code data}, or {@code reused} made so again. */
    static StreamSlot gathering(StreamSlot reused, ByteBuf data) {
        StreamSlot s = reused != null ? reused : new StreamSlot();
        s.data = data;
        s.done = true;
        s.owner = null;
        s.detached = false;
        s.gathers = true;
        return s;
    }

    /** Whether its codec made it ({@link #gathering}): once delivered nothing else refers to it. */
    boolean gathers() {
        return gathers;
    }

    /**
     * Appends a short write's bytes, read where the transport holds them, to this whole slot's (one gathering short
     * writes, {@link StreamCodec#shortWriteArrived}): true if they fit its buffer's limit and the slot is still
     * undelivered; false, nothing copied, otherwise.
     */
    boolean append(ShortPayload payload) {
        ByteBuf d = data;
        int n = payload.length();
        if (d == null || detached || d.maxWritableBytes() < n) {
            return false;
        }
        if (d.writableBytes() < n) {
            data = d = Buffers.grow(d, n); // not ensureWritable: a NIO view per growth
        }
        payload.copyTo(d, d.writerIndex());
        d.writerIndex(d.writerIndex() + n);
        return true;
    }

    /** The write's bytes are all here; owns {@code data}. */
    public void complete(ByteBuf data) {
        if (done || detached) {
            data.release();
            return;
        }
        this.data = data;
        done = true;
        if (owner != null) {
            owner.slotDone();
        }
    }

    /** The write will never be whole (its endpoint ended): nothing is delivered for it. */
    public void abort() {
        if (done) {
            return;
        }
        done = true;
        if (owner != null && !detached) {
            owner.slotDone();
        }
    }

    boolean isDone() {
        return done;
    }

    /** Hands over the bytes (null if the write was given up). */
    ByteBuf take() {
        ByteBuf d = data;
        data = null;
        return d;
    }

    void attach(StreamCodec codec) {
        owner = codec;
    }

    /** The stream is gone: release what the slot holds now and whatever completes it later. */
    void detach() {
        detached = true;
        owner = null;
        ByteBuf d = take();
        if (d != null) {
            d.release();
        }
    }
}
