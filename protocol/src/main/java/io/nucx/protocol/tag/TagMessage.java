package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.DefaultByteBufHolder;

/** A tagged message: a 64-bit tag and its content. Whoever holds it releases it. */
public final class TagMessage extends DefaultByteBufHolder {

    private final long tag;

    public TagMessage(long tag, ByteBuf content) {
        super(content);
        this.tag = tag;
    }

    public long tag() {
        return tag;
    }

    @Override
    public TagMessage replace(ByteBuf content) {
        return new TagMessage(tag, content);
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
