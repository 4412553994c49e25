package io.nucx.transport;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.util.AbstractReferenceCounted;

/**
 * One active message as every AM-capable lane carries it: {@code {am id, flags, header, payload}}.
 * The frame owns one reference to each buffer and releases both when it is released.
 */
public final class AmFrame extends AbstractReferenceCounted {

    private final int amId;
    private final int flags;
    private final ByteBuf header;
    private final ByteBuf payload;

    private AmFrame(int amId, int flags, ByteBuf header, ByteBuf payload) {
        this.amId = amId;
        this.flags = flags;
        this.header = header;
        this.payload = payload;
    }

    /** A frame taking ownership of {@code header} and {@code payload}. */
    public static AmFrame of(int amId, int flags, ByteBuf header, ByteBuf payload) {
        if (amId < 0 || amId > 0xff) {
            header.release();
            payload.release();
            throw new IllegalArgumentException("am id " + amId + " out of range 0..255");
        }
        return new AmFrame(amId, flags & 0xff, header, payload);
    }

    /** A frame with a header only. */
    public static AmFrame of(int amId, ByteBuf header) {
        return of(amId, 0, header, Unpooled.EMPTY_BUFFER);
    }

    public int amId() {
        return amId;
    }

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
        return new AmFrame(amId, flags, header.retainedDuplicate(), payload.retainedDuplicate());
    }

    /** Header plus payload bytes: what the frame weighs against queue limits. */
    public int length() {
        return header.readableBytes() + payload.readableBytes();
    }

    @Override
    protected void deallocate() {
        try {
            header.release();
        } finally {
            payload.release();
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
        return "AmFrame(am=" + amId + ", flags=" + flags + ", header=" + header.readableBytes() + "B, payload="
                + payload.readableBytes() + "B)";
    }
}
