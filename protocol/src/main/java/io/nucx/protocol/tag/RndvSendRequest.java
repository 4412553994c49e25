package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.DefaultByteBufHolder;

/**
 * A tagged send or a stream write the selection gave to rendezvous; travels from {@link EagerCodec} down to
 * {@link RndvCodec}.
 */
public final class RndvSendRequest extends DefaultByteBufHolder {
    private final long tag;
    private final boolean offerGet;
    private final boolean stream;

    public RndvSendRequest(long tag, ByteBuf content) {
        this(tag, content, false);
    }

    /** @param offerGet {@code rndv/get/zcopy}: the RTS carries a remote key so the receiver can read the data */
    public RndvSendRequest(long tag, ByteBuf content, boolean offerGet) {
        this(tag, content, offerGet, false);
    }

    /** @param stream a stream write: its RTS is STREAM_RTS, which the receiver's stream takes, never its matcher */
    public RndvSendRequest(long tag, ByteBuf content, boolean offerGet, boolean stream) {
        super(content);
        this.tag = tag;
        this.offerGet = offerGet;
        this.stream = stream;
    }

    public boolean stream() {
        return stream;
    }

    /**
     * Whether {@code content} can be offered for the receiver to read ({@code rndv/get/zcopy}): one contiguous run of
     * native memory (a direct buffer, or a composite of one direct component). Heap memory moves with the GC, so the
     * receiver asks for such data by RTR instead.
     */
    public static boolean offersKey(ByteBuf content) {
        return content.readableBytes() > 0 && content.isDirect() && content.nioBufferCount() == 1;
    }

    public boolean offerGet() {
        return offerGet;
    }

    public long tag() {
        return tag;
    }
}
