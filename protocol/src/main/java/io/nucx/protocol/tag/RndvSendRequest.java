package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.DefaultByteBufHolder;

/** A tagged send the selection gave to rendezvous; travels from the selecting handler to {@link RndvTagSendHandler}. */
public final class RndvSendRequest extends DefaultByteBufHolder {
    private final long tag;

    public RndvSendRequest(long tag, ByteBuf content) {
        super(content);
        this.tag = tag;
    }

    public long tag() {
        return tag;
    }
}
