package io.nucx.wireup;

import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.UnsupportedMessageTypeException;
import io.netty.util.ReferenceCountUtil;
import io.nucx.transport.AmFrame;

/**
 * The bottom of a wired-up endpoint's pipeline: sends each {@link AmFrame} on the AM lane (a transport channel) and
 * completes the endpoint's promise from the lane's. Anything that is not a frame at this point is a bug above and
 * fails its promise. A write the lane fails after the endpoint failed gets the endpoint's cause (the lane only knows
 * it was closed). A close passing here is the endpoint's graceful close ({@link Endpoint#closeGracefully}).
 */
final class LaneDispatcher extends ChannelOutboundHandlerAdapter {

    private final Endpoint endpoint;
    private final Channel amLane;

    LaneDispatcher(Endpoint endpoint, Channel amLane) {
        this.endpoint = endpoint;
        this.amLane = amLane;
    }

    Channel amLane() {
        return amLane;
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        if (!(msg instanceof AmFrame frame)) {
            ReferenceCountUtil.release(msg);
            promise.tryFailure(new UnsupportedMessageTypeException(msg, AmFrame.class));
            return;
        }
        if (promise.isVoid()) {
            amLane.write(frame, amLane.voidPromise());
        } else {
            ChannelFuture f = amLane.write(frame);
            if (f.isDone()) {
                complete(f, promise);
            } else {
                f.addListener((ChannelFutureListener) done -> complete(done, promise));
            }
        }
    }

    private void complete(ChannelFuture lane, ChannelPromise promise) {
        if (lane.isSuccess()) {
            promise.trySuccess();
        } else {
            EndpointException why = endpoint.failure();
            promise.tryFailure(why != null ? why : lane.cause());
        }
    }

    @Override
    public void close(ChannelHandlerContext ctx, ChannelPromise promise) {
        endpoint.closeGracefully(ctx, promise);
    }

    @Override
    public void flush(ChannelHandlerContext ctx) {
        amLane.flush();
    }
}
