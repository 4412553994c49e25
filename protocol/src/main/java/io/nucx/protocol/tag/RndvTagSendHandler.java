package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.EndpointConfig;
import io.nucx.transport.AmFrame;

/**
 * The rendezvous protocol over active messages ({@code tag/rndv}, data as {@code rndv/am/bcopy}), sender side:
 * a {@link RndvSendRequest} becomes an RTS frame; the message waits in {@link RndvSends} until the receiver matched
 * it and answered RTR (then the data goes as RNDV_DATA fragments, the last carrying the send's promise) or ATS
 * (the receive was too small: the send fails with {@link MessageTruncatedException}). Other messages pass through.
 */
public final class RndvTagSendHandler extends ChannelOutboundHandlerAdapter {

    private final RndvSends sends;
    private final int fragment;

    public RndvTagSendHandler(EndpointConfig config, RndvSends sends) {
        this.sends = sends;
        this.fragment = config.amLaneAttrs().maxBcopy() - RndvHeaders.DATA_LENGTH;
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        if (!(msg instanceof RndvSendRequest req)) {
            ctx.write(msg, promise);
            return;
        }
        ByteBuf content = req.content();
        long id = sends.add(req.tag(), content, promise, ctx, fragment); // owns the request's reference now
        ByteBuf header = ctx.alloc().buffer(RndvHeaders.RTS_LENGTH).writeLongLE(req.tag()).writeLongLE(id)
                .writeLongLE(content.readableBytes());
        ctx.write(AmFrame.of(AmIds.RNDV_RTS, header), ctx.voidPromise());
    }
}
