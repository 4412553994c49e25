package io.nucx.transport;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * What of the peer's waits on a socket lane, asked of the kernel: real sockets on loopback, the receiving side's
 * reads paused or its loop held busy while the bytes arrive.
 */
@Timeout(60)
class LaneBacklogTest {

    /**
     * A connected pair on {@code engine}, each side on a loop of its own; {@code onAccepted} sees the accepted
     * channel's pipeline first.
     */
    private record Pair(EventLoopGroup group, EventLoopGroup clientGroup, Channel client, Channel accepted)
            implements AutoCloseable {
        @Override
        public void close() throws InterruptedException {
            try {
                client.close().sync();
                accepted.close().sync();
            } finally {
                clientGroup.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
                group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
            }
        }
    }

    private static Pair connect(IoEngine engine, boolean autoRead, Consumer<Channel> onAccepted) throws Exception {
        assumeTrue(engine.availability().isAvailable(), () -> engine + ": " + engine.availability().reason());
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, engine.ioHandlerFactory());
        EventLoopGroup clientGroup = new MultiThreadIoEventLoopGroup(1, engine.ioHandlerFactory());
        CompletableFuture<Channel> accepted = new CompletableFuture<>();
        try {
            Channel server = new ServerBootstrap().group(group).channel(engine.serverChannel())
                    .childOption(ChannelOption.AUTO_READ, autoRead)
                    .childHandler(new ChannelInitializer<>() {
                        @Override
                        protected void initChannel(Channel ch) {
                            onAccepted.accept(ch);
                            accepted.complete(ch);
                        }
                    }).bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0)).sync().channel();
            Channel client = new Bootstrap().group(clientGroup).channel(engine.socketChannel())
                    .handler(new ChannelInboundHandlerAdapter()).connect(server.localAddress()).sync().channel();
            Channel child = accepted.get(10, TimeUnit.SECONDS);
            server.close().sync();
            return new Pair(group, clientGroup, client, child);
        } catch (Exception e) {
            clientGroup.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            throw e;
        }
    }

    private static <T> T onLoop(Channel ch, Callable<T> task) throws Exception {
        return ch.eventLoop().submit(task).get(10, TimeUnit.SECONDS);
    }

    private static void awaitUnread(Channel ch, long bytes) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (onLoop(ch, () -> LaneBacklog.socketBytesUnread(ch)) != bytes) {
            assertTrue(System.nanoTime() < deadline, "the socket never held " + bytes + " B unread");
            Thread.sleep(5);
        }
    }

    /** Reads paused: the kernel holds what came, it is counted and named, and it is not taken for a waiting read. */
    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"EPOLL", "IO_URING"})
    void bytesUnreadWithReadsPausedAreCountedButNotTakenForFramesWaiting(IoEngine engine) throws Exception {
        try (Pair p = connect(engine, false, ch -> { })) {
            assertEquals(0, onLoop(p.accepted(), () -> LaneBacklog.socketBytesUnread(p.accepted())));
            p.client().writeAndFlush(Unpooled.wrappedBuffer(new byte[777])).sync();
            awaitUnread(p.accepted(), 777);
            assertFalse(onLoop(p.accepted(), () -> LaneBacklog.peerFramesWaiting(p.accepted())),
                    "reads paused: nothing waits for a read this side asked for");
            assertEquals("socket 777 B unread", onLoop(p.accepted(), () -> LaneBacklog.transportState(p.accepted())));
        }
    }

    /**
     * The receiving loop held by a task while the bytes arrive (reads requested): they wait in the socket and count
     * as the peer's frames waiting; once the loop gets to its I/O they are read and nothing waits.
     */
    @Test
    void bytesArrivingWhileTheLoopIsBusyAreFramesWaitingUntilItReads() throws Exception {
        AtomicInteger read = new AtomicInteger();
        try (Pair p = connect(IoEngine.EPOLL, true, ch -> ch.pipeline().addLast(new ChannelInboundHandlerAdapter() {
            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                read.addAndGet(((ByteBuf) msg).readableBytes());
                ((ByteBuf) msg).release();
            }
        }))) {
            Channel ch = p.accepted();
            boolean waitingWhileBusy = onLoop(ch, () -> {
                p.client().writeAndFlush(Unpooled.wrappedBuffer(new byte[300])); // the client's loop is the other one
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (LaneBacklog.socketBytesUnread(ch) != 300 && System.nanoTime() < deadline) {
                    Thread.onSpinWait();
                }
                return LaneBacklog.peerFramesWaiting(ch);
            });
            assertTrue(waitingWhileBusy, "300 B in the socket of a loop held busy, reads requested");
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (read.get() < 300) {
                assertTrue(System.nanoTime() < deadline, "read " + read.get() + " of 300 B");
                Thread.sleep(5);
            }
            assertFalse(onLoop(ch, () -> LaneBacklog.peerFramesWaiting(ch)), "read: nothing waits");
        }
    }

    /** A handler holding frames for a later turn counts with an empty socket, and is named. */
    @Test
    void aHandlerHoldingFramesCountsWithTheSocketEmpty() throws Exception {
        boolean[] holding = {false};
        class Holder extends ChannelInboundHandlerAdapter implements LaneBacklog.FrameHolder {
            @Override
            public boolean holdsPeerFrames() {
                return holding[0];
            }
        }
        try (Pair p = connect(IoEngine.EPOLL, true, ch -> ch.pipeline().addLast(new Holder()))) {
            Channel ch = p.accepted();
            assertFalse(onLoop(ch, () -> LaneBacklog.peerFramesWaiting(ch)));
            assertEquals("socket 0 B unread", onLoop(ch, () -> LaneBacklog.transportState(ch)));
            onLoop(ch, () -> holding[0] = true);
            assertTrue(onLoop(ch, () -> LaneBacklog.peerFramesWaiting(ch)));
            assertEquals("socket 0 B unread, frames held for the next turn",
                    onLoop(ch, () -> LaneBacklog.transportState(ch)));
        }
    }

    /** NIO's channels hide their descriptor: the count is unknown, nothing is said, nothing is taken as waiting. */
    @Test
    void nioSocketsCannotBeAsked() throws Exception {
        try (Pair p = connect(IoEngine.NIO, false, ch -> { })) {
            p.client().writeAndFlush(Unpooled.wrappedBuffer(new byte[64])).sync();
            Channel ch = p.accepted();
            assertEquals(-1, onLoop(ch, () -> LaneBacklog.socketBytesUnread(ch)));
            assertEquals("", onLoop(ch, () -> LaneBacklog.transportState(ch)));
            assertFalse(onLoop(ch, () -> LaneBacklog.peerFramesWaiting(ch)));
        }
    }
}
