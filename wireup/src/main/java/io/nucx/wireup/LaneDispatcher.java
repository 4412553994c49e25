package io.nucx.wireup;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.UnsupportedMessageTypeException;
import io.netty.util.ReferenceCountUtil;
import io.nucx.transport.AmFrame;

/**
 * The bottom of a wired-up endpoint's pipeline: hands each {@link AmFrame} to the endpoint's {@link MessageLanes}
 * (the AM lane, rendezvous data spread over the AM_BW lanes, held during a failover), which completes the endpoint's
 * promise from the lanes'. Anything that is not a frame at this point is a bug above and fails its promise. A close
 * passing here is the endpoint's graceful close ({@link Endpoint#closeGracefully}).
 */
final class LaneDispatcher extends ChannelOutboundHandlerAdapter {

    private final Endpoint endpoint;
    private final MessageLanes lanes;

    LaneDispatcher(Endpoint endpoint, MessageLanes lanes) {
        this.endpoint = endpoint;
        this.lanes = lanes;
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        if (!(msg instanceof AmFrame frame)) {
            ReferenceCountUtil.release(msg);
            promise.tryFailure(new UnsupportedMessageTypeException(msg, AmFrame.class));
            return;
        }
        lanes.write(frame, promise);
    }

    @Override
    public void close(ChannelHandlerContext ctx, ChannelPromise promise) {
        endpoint.closeGracefully(ctx, promise);
    }

    @Override
    public void flush(ChannelHandlerContext ctx) {
        lanes.flush();
    }
}
