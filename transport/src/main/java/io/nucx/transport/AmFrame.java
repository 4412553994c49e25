package io.nucx.transport;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.util.AbstractReferenceCounted;
import io.netty.util.Recycler;

/**
 * One active message as every AM-capable lane carries it: {@code {am id, flags, header, payload}}.
 * The frame owns one reference to each buffer and releases both when it is released.
 *
 * <p>Frames are pooled, as Netty pools its buffers ({@link Recycler}): every message creates at least one on each
 * side, and a message loop should not allocate. So, as with a pooled buffer, a released frame must not be touched
 * again: its object may already carry another message.
 */
public final class AmFrame extends AbstractReferenceCounted {

    /**
     * The frame is larger than the lane's {@code maxBcopy} because its receiver asked for it so: it places the payload
     * straight into its destination as it arrives ({@link PayloadPlacement}), so the frame's size costs it no buffer.
     * Only a lane with {@link IfaceAttributes#maxPlaced} sends one, and a receiver that did not place it refuses it.
     */
    public static final int FLAG_PLACED = 0x80;

    private static final Recycler<AmFrame> POOL = new Recycler<>() {
        @Override
        protected AmFrame newObject(Handle<AmFrame> handle) {
            return new AmFrame(handle);
        }
    };

    private final Recycler.Handle<AmFrame> handle;
    private int amId;
    private int flags;
    private ByteBuf header;
    private ByteBuf payload;

    private AmFrame(Recycler.Handle<AmFrame> handle) {
        this.handle = handle;
    }

    private static AmFrame newInstance(int amId, int flags, ByteBuf header, ByteBuf payload) {
        AmFrame f = POOL.get();
        f.setRefCnt(1);
        f.amId = amId;
        f.flags = flags;
        f.header = header;
        f.payload = payload;
        return f;
    }

    /** A frame taking ownership of {@code header} and {@code payload}. */
    public static AmFrame of(int amId, int flags, ByteBuf header, ByteBuf payload) {
        if (amId < 0 || amId > 0xff) {
            header.release();
            payload.release();
            throw new IllegalArgumentException("am id " + amId + " out of range 0..255");
        }
        return newInstance(amId, flags & 0xff, header, payload);
    }

    /** A frame with a header only. */
    public static AmFrame of(int amId, ByteBuf header) {
        return of(amId, 0, header, Unpooled.EMPTY_BUFFER);
    }

    public int amId() {
        return amId;
    }

    /**
     * {@link #FLAG_PLACED} and bits of the protocol that owns the am id (below {@code 0x80}), which every lane carries
     * unchanged.
     */
    public int flags() {
        return flags;
    }

    public ByteBuf header() {
        return header;
    }

    public ByteBuf payload() {
        return payload;
    }

    /**
     * A second frame over the same bytes with its own indexes, holding its own references: a lane may consume it
     * (writing moves reader indexes) while this one is kept, e.g. to be sent again on another lane.
     */
    public AmFrame retainedDuplicate() {
        return newInstance(amId, flags, header.retainedDuplicate(), payload.retainedDuplicate());
    }

    /** Header plus payload bytes: what the frame weighs against queue limits. */
    public int length() {
        return header.readableBytes() + payload.readableBytes();
    }

    @Override
    protected void deallocate() {
        ByteBuf h = header;
        ByteBuf p = payload;
        header = null;
        payload = null;
        try {
            h.release();
        } finally {
            try {
                p.release();
            } finally {
                handle.recycle(this);
            }
        }
    }

    @Override
    public AmFrame touch(Object hint) {
        header.touch(hint);
        payload.touch(hint);
        return this;
    }

    @Override
    public AmFrame retain() {
        return (AmFrame) super.retain();
    }

    @Override
    public AmFrame touch() {
        return touch(null);
    }

    @Override
    public String toString() {
        if (header == null) {
            return "AmFrame(released)";
        }
        return "AmFrame(am=" + amId + ", flags=" + flags + ", header=" + header.readableBytes() + "B, payload="
                + payload.readableBytes() + "B)";
    }
}
