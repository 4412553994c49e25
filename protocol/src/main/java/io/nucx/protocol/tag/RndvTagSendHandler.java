package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.EndpointConfig;
import io.nucx.transport.AmFrame;
import io.nucx.transport.rma.MemoryRegistration;

/**
 * The rendezvous protocol over active messages ({@code tag/rndv}, data as {@code rndv/am/bcopy}), sender side:
 * a {@link RndvSendRequest} becomes an RTS frame; the message waits in {@link RndvSends} until the receiver matched
 * it and answered RTR (then the data goes as RNDV_DATA fragments, the last carrying the send's promise) or ATS
 * (the receive was too small: the send fails with {@link MessageTruncatedException}). Other messages pass through.
 * For {@code rndv/get/zcopy} the RTS also carries the buffer's remote key; the receiver reads the data itself and
 * answers ATS, which completes the send and releases the buffer (or, if it may not read, answers RTR as above).
 * For {@code rndv/put/zcopy} the RTS is plain and the receiver's RTR carries its buffer's key: {@link RndvSends}
 * writes the data there and sends ATP.
 */
public final class RndvTagSendHandler extends ChannelOutboundHandlerAdapter {

    private final RndvSends sends;
    private final int fragment;

    public RndvTagSendHandler(EndpointConfig config, RndvSends sends) {
        this.sends = sends;
        this.fragment = config.minMaxBcopy() - RndvHeaders.DATA_LENGTH; // each fragment fits every lane it may take
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        if (!(msg instanceof RndvSendRequest req)) {
            ctx.write(msg, promise);
            return;
        }
        ByteBuf content = req.content();
        MemoryRegistration exposed = req.offerGet() ? sends.exposeForGet(ctx.channel(), content) : null;
        long id = sends.add(req.tag(), content, promise, ctx, fragment, exposed); // owns the request's reference now
        byte[] key = exposed == null ? null : exposed.packedKey();
        ByteBuf header = RndvHeaders.writeRts(ctx.alloc().buffer(RndvHeaders.rtsLength(key)), req.tag(), id,
                content.readableBytes(), key);
        ctx.write(AmFrame.of(AmIds.RNDV_RTS, header), ctx.voidPromise());
    }

    /**
     * Whether another process could read {@code content} with a remote key: only one contiguous run of native memory
     * (a direct buffer, or a composite of one direct component); not heap memory, which moves with the GC (the
     * receiver then asks for the data by RTR). {@link RndvSends} holds the buffer until ATS, so the memory stays.
     */
    static boolean exposable(ByteBuf content) {
        return RndvKeys.nativeRun(content, content.readerIndex(), content.readableBytes()) != null;
    }
}
