package io.nucx.wireup;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.UnsupportedMessageTypeException;
import io.netty.util.ReferenceCountUtil;
import io.nucx.transport.AmFrame;

/**
 * The head of a wired-up endpoint's pipeline, outbound: each {@link AmFrame} goes to the endpoint's
 * {@link EndpointLanes} (the {@link LaneDistributor} picks the lane; in failover mode the {@link FailoverReliability}
 * keeps it until confirmed), which completes the write's promise from the lanes'. Anything that is not a frame at
 * this point is a bug above and fails its promise; a write after the endpoint failed fails with that failure. A close
 * passing here is the endpoint's graceful close ({@link EndpointChannel#closeGracefully}).
 */
final class LaneDispatcher extends ChannelOutboundHandlerAdapter {

    private final EndpointChannel endpoint;

    LaneDispatcher(EndpointChannel endpoint) {
        this.endpoint = endpoint;
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        if (!(msg instanceof AmFrame frame)) {
            ReferenceCountUtil.release(msg);
            // No codec took it: name what an endpoint takes, not the frames they turn them into.
            promise.tryFailure(new UnsupportedMessageTypeException(msg, EndpointChannel.WRITABLE));
            return;
        }
        if (endpoint.failure() != null) {
            frame.release();
            promise.tryFailure(endpoint.failure());
            return;
        }
        endpoint.lanes().write(frame, promise);
    }

    @Override
    public void flush(ChannelHandlerContext ctx) {
        endpoint.lanes().flush();
    }

    @Override
    public void close(ChannelHandlerContext ctx, ChannelPromise promise) {
        endpoint.lifecycle().closeGracefully(promise);
    }
}
