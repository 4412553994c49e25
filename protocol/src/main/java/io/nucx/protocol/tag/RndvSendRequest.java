package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.DefaultByteBufHolder;

/** A tagged send the selection gave to rendezvous; travels from the selecting handler to {@link RndvTagSendHandler}. */
public final class RndvSendRequest extends DefaultByteBufHolder {
    private final long tag;
    private final boolean offerGet;

    public RndvSendRequest(long tag, ByteBuf content) {
        this(tag, content, false);
    }

    /** @param offerGet {@code rndv/get/zcopy}: the RTS carries a remote key so the receiver can read the data */
    public RndvSendRequest(long tag, ByteBuf content, boolean offerGet) {
        super(content);
        this.tag = tag;
        this.offerGet = offerGet;
    }

    public boolean offerGet() {
        return offerGet;
    }

    public long tag() {
        return tag;
    }
}
