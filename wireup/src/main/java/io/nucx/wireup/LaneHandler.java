package io.nucx.wireup;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.internal.logging.InternalLogger;
import io.netty.util.internal.logging.InternalLoggerFactory;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.ProtocolException;
import io.nucx.transport.AmFrame;

/**
 * The last handler of every lane channel: hands each arriving frame to the worker by its AM id. A lane someone
 * connected to us starts without an endpoint; its first frame must be a wireup REQUEST, which creates one. A frame
 * that breaks the protocol closes this lane only; the worker and its other endpoints go on.
 */
final class LaneHandler extends ChannelInboundHandlerAdapter {

    private static final InternalLogger LOG = InternalLoggerFactory.getInstance(LaneHandler.class);

    private final Worker worker;
    private Endpoint endpoint;
    private Throwable failure;

    LaneHandler(Worker worker, Endpoint endpoint) {
        this.worker = worker;
        this.endpoint = endpoint;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof AmFrame frame)) {
            ReferenceCountUtil.release(msg);
            throw new ProtocolException("lane received " + msg.getClass().getName() + ", not a frame");
        }
        switch (frame.amId()) {
            case AmIds.WIREUP -> {
                try {
                    WireupMessage m = WireupMessage.from(frame);
                    if (endpoint != null) {
                        throw new ProtocolException("second wireup REQUEST on a lane of " + endpoint);
                    }
                    endpoint = worker.acceptEndpoint(m, ctx.channel());
                } finally {
                    frame.release();
                }
            }
            case AmIds.EAGER_ONLY, AmIds.EAGER_FIRST, AmIds.EAGER_MIDDLE, AmIds.EAGER_SYNC_ONLY, AmIds.EAGER_SYNC_FIRST,
                 AmIds.EAGER_SYNC_ACK -> {
                if (endpoint == null) {
                    frame.release();
                    throw new ProtocolException(AmIds.name(frame.amId()) + " before the wireup REQUEST");
                }
                worker.eagerReceiver().onFrame(endpoint, frame);
            }
            case AmIds.RNDV_RTS, AmIds.RNDV_RTR, AmIds.RNDV_DATA, AmIds.RNDV_ATS -> {
                if (endpoint == null) {
                    frame.release();
                    throw new ProtocolException(AmIds.name(frame.amId()) + " before the wireup REQUEST");
                }
                worker.rndvReceiver().onFrame(endpoint, frame);
            }
            default -> {
                frame.release();
                throw new ProtocolException("unknown active message id " + frame.amId());
            }
        }
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        if (failure == null) {
            failure = cause;
            worker.laneFailed(cause);
            LOG.warn("closing lane {} -> {} of worker {}: {}", ctx.channel().localAddress(),
                    ctx.channel().remoteAddress(), worker.name(), cause.toString());
        }
        ctx.close();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        if (endpoint != null) {
            endpoint.laneInactive(failure);
        }
        ctx.fireChannelInactive();
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        if (endpoint != null) {
            endpoint.pipeline().fireChannelWritabilityChanged();
        }
        ctx.fireChannelWritabilityChanged();
    }
}
