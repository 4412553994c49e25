package io.nucx.wireup;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.util.ReferenceCountUtil;
import io.nucx.WireupException;

/**
 * The bottom handler of an RMA-only lane (cma, an rdma queue pair used for RMA and atomics only): no frames are
 * expected on it (anything that comes is released), and an error of the lane (a queue pair in the error state: the
 * peer died) is kept as a lane failure and closes it; the operations in flight fail with it, and the protocols move
 * their data another way.
 */
final class RmaLaneHandler extends ChannelInboundHandlerAdapter {

    private final DefaultWorker worker;
    private final String name;

    RmaLaneHandler(DefaultWorker worker, String name) {
        this.worker = worker;
        this.name = name;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        ReferenceCountUtil.release(msg);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        worker.laneFailed(new WireupException("RMA lane " + name + " failed: " + cause.getMessage(), cause));
        ctx.close();
    }
}
