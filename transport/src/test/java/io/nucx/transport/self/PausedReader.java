package io.nucx.transport.self;

import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.nucx.transport.AmFrame;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;

/**
 * A self lane's accepting side that starts with auto-read off, so frames wait in its queue until the test turns
 * reading on; each frame read goes to {@link #read} (on the reader's loop), then counts down {@link #expected}, and is
 * released. A throw from {@link #read} or a reported exception is kept in {@link #failure}.
 */
class PausedReader extends ChannelInboundHandlerAdapter {
    final CompletableFuture<Channel> channel = new CompletableFuture<>();
    /** The sequence number each frame's header starts with, in the order read; only touched on the reader's loop. */
    final List<Long> sequence = new ArrayList<>();
    volatile CountDownLatch expected = new CountDownLatch(Integer.MAX_VALUE);
    volatile Throwable failure;

    /** What the test keeps of a frame (its sequence number; a test may check more); the frame is released after. */
    void read(AmFrame frame) {
        sequence.add(frame.header().getLongLE(frame.header().readerIndex()));
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        ctx.channel().config().setAutoRead(false);
        channel.complete(ctx.channel());
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        AmFrame f = (AmFrame) msg;
        try {
            read(f);
        } catch (Throwable t) {
            failure = t;
        } finally {
            expected.countDown(); // counted either way: a wrong frame is reported by failure, not by a missing one
            f.release();
        }
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        failure = cause;
    }
}
