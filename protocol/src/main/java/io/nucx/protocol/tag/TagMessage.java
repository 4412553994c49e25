package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.DefaultByteBufHolder;

/** A tagged message: a 64-bit tag and its content. Whoever holds it releases it. */
public final class TagMessage extends DefaultByteBufHolder {

    private final long tag;
    private final boolean sync;

    public TagMessage(long tag, ByteBuf content) {
        this(tag, content, false);
    }

    /**
     * @param sync a synchronous send: its future completes only once the receiver has matched the message
     *             (UCX's {@code ucp_tag_send_sync_nbx})
     */
    public TagMessage(long tag, ByteBuf content, boolean sync) {
        super(content);
        this.tag = tag;
        this.sync = sync;
    }

    /** Whether sending it waits for the receiver to match it. */
    public boolean sync() {
        return sync;
    }

    public long tag() {
        return tag;
    }

    @Override
    public TagMessage replace(ByteBuf content) {
        return new TagMessage(tag, content, sync);
    }

    @Override
    public TagMessage retain() {
        super.retain();
        return this;
    }

    @Override
    public TagMessage touch(Object hint) {
        super.touch(hint);
        return this;
    }

    @Override
    public String toString() {
        return "TagMessage(tag=0x" + Long.toHexString(tag) + ", " + content().readableBytes() + "B)";
    }
}
