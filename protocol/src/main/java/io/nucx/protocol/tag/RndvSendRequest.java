package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.DefaultByteBufHolder;

/**
 * A tagged send, a stream write or an active message the selection gave to rendezvous; travels from
 * {@link EagerCodec} down to {@link RndvCodec}, which takes over both its buffers.
 */
public final class RndvSendRequest extends DefaultByteBufHolder {
    private final long tag;
    private final boolean offerGet;
    private final MessageKind kind;
    private final ByteBuf rtsPayload;

    public RndvSendRequest(long tag, ByteBuf content) {
        this(tag, content, false);
    }

    /** @param offerGet {@code rndv/get/zcopy}: the RTS carries a remote key so the receiver can read the data */
    public RndvSendRequest(long tag, ByteBuf content, boolean offerGet) {
        this(tag, content, offerGet, MessageKind.TAG, null);
    }

    /**
     * @param kind       its RTS's id: a stream write's (STREAM_RTS) goes to the receiver's stream, an active message's
     *                   (AM_RTS) to its handler, never to the matcher
     * @param rtsPayload what the RTS carries after its header (an active message's user header), or null; owned
     */
    public RndvSendRequest(long tag, ByteBuf content, boolean offerGet, MessageKind kind, ByteBuf rtsPayload) {
        super(content);
        this.tag = tag;
        this.offerGet = offerGet;
        this.kind = kind;
        this.rtsPayload = rtsPayload;
    }

    public MessageKind kind() {
        return kind;
    }

    /** The RTS's payload, or null; the taker releases it. */
    public ByteBuf rtsPayload() {
        return rtsPayload;
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
