package io.nucx.transport.shm;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.nucx.transport.IoEngine;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * A loop without shm channels (sockets only) polls its sockets without blocking for the spin time after its last
 * work, then parks in its engine; a spin of 0 parks at once. Seen from the loop thread's CPU time around a real
 * socket's message: a spinning loop burns its core, a parked one nothing. Over each socket engine this machine has.
 */
@Timeout(60)
class SocketsOnlyLoopTest {

    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    private static final long SPIN_MILLIS = 600;
    private static final long WINDOW_MILLIS = 200;

    private final LinkedBlockingQueue<String> lines = new LinkedBlockingQueue<>();
    private EventLoopGroup loop;
    private final EventLoopGroup peer = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());

    @AfterEach
    void tearDown() throws Exception {
        stopLoop();
        peer.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
    }

    private void stopLoop() throws Exception {
        if (loop != null) {
            loop.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
            loop = null;
        }
    }

    @ParameterizedTest
    @EnumSource(IoEngine.class)
    void anIdleLoopPollsItsSocketsForTheSpinTimeThenParks(IoEngine engine) throws Exception {
        Channel client = start(engine, TimeUnit.MILLISECONDS.toNanos(SPIN_MILLIS));
        long thread = loopThread();
        send(client, "one");
        long spinning = cpuMillisOver(thread, WINDOW_MILLIS);
        assertTrue(spinning >= WINDOW_MILLIS / 4, engine + ": the loop spent " + spinning + " ms of CPU in the "
                + WINDOW_MILLIS + " ms after a message, within its " + SPIN_MILLIS + " ms spin: it did not poll");
        Thread.sleep(SPIN_MILLIS); // past the spin
        long parked = cpuMillisOver(thread, WINDOW_MILLIS);
        assertTrue(parked <= WINDOW_MILLIS / 10, engine + ": the loop spent " + parked + " ms of CPU in "
                + WINDOW_MILLIS + " ms after its spin ended: it did not park");
        send(client, "two"); // a parked loop is still woken by its socket
    }

    /** A task from another thread wakes a parked loop, which then spins again: the task is often a send. */
    @ParameterizedTest
    @EnumSource(IoEngine.class)
    void aTaskFromAnotherThreadStartsASpin(IoEngine engine) throws Exception {
        start(engine, TimeUnit.MILLISECONDS.toNanos(SPIN_MILLIS));
        long thread = loopThread();
        Thread.sleep(SPIN_MILLIS + WINDOW_MILLIS); // parked
        long parked = cpuMillisOver(thread, WINDOW_MILLIS);
        loop.next().submit(() -> { }).get(10, TimeUnit.SECONDS);
        long spinning = cpuMillisOver(thread, WINDOW_MILLIS);
        assertTrue(parked <= WINDOW_MILLIS / 10 && spinning >= WINDOW_MILLIS / 4, engine + ": the loop spent "
                + parked + " ms of CPU parked and " + spinning + " ms in the " + WINDOW_MILLIS + " ms after a task");
    }

    @ParameterizedTest
    @EnumSource(IoEngine.class)
    void aSpinTimeOfZeroParksAtOnce(IoEngine engine) throws Exception {
        Channel client = start(engine, 0);
        long thread = loopThread();
        send(client, "one");
        long cpu = cpuMillisOver(thread, WINDOW_MILLIS);
        assertTrue(cpu <= WINDOW_MILLIS / 10, engine + ": the loop spent " + cpu + " ms of CPU in the "
                + WINDOW_MILLIS + " ms after a message with a spin of 0");
        send(client, "two");
    }

    /**
     * A loop without rings counts its idle passes before it yields with its own figure ({@code socketSpinPasses}): an
     * idle pass there is a system call, so a group's loop of tcp lanes yields from the first. Each way round, so the
     * ring loops' figure cannot pass for it.
     */
    @ParameterizedTest
    @EnumSource(IoEngine.class)
    void aLoopWithoutRingsYieldsAfterItsOwnCountOfIdlePasses(IoEngine engine) throws Exception {
        assertTrue(yieldsWithinASpin(engine, 1_000_000_000, 0) > 0, engine + ": no yield with 0 socket passes");
        stopLoop();
        assertEquals(0, yieldsWithinASpin(engine, 0, 1_000_000_000),
                engine + ": yields within 1e9 socket passes (the ring loops' 0 taken instead)");
    }

    /** The loop's yields in a window of its spin after a message, with the given passes before it yields. */
    private int yieldsWithinASpin(IoEngine engine, int spinPasses, int socketSpinPasses) throws Exception {
        ShmIoHandler[] made = new ShmIoHandler[1];
        IoHandlerFactory shm = ShmIoHandler.newFactory(engine.ioHandlerFactory(),
                TimeUnit.MILLISECONDS.toNanos(SPIN_MILLIS), spinPasses, socketSpinPasses, ShmIoHandler.Backoff.ALWAYS);
        IoHandlerFactory capturing = executor -> made[0] = (ShmIoHandler) shm.newHandler(executor);
        Channel client = start(engine, capturing);
        send(client, "one");
        Thread.sleep(WINDOW_MILLIS);
        return loop.next().submit(() -> made[0].yields).get(10, TimeUnit.SECONDS);
    }

    /** The loop under test (one thread, sockets only) with a listening socket; a connected client from another loop. */
    private Channel start(IoEngine engine, long spinNanos) throws Exception {
        return start(engine, ShmIoHandler.newFactory(engine.ioHandlerFactory(), spinNanos));
    }

    private Channel start(IoEngine engine, IoHandlerFactory factory) throws Exception {
        assumeTrue(engine.availability().isAvailable(), () -> engine + ": " + engine.availability().reason());
        loop = new MultiThreadIoEventLoopGroup(1, factory);
        Channel listener = new ServerBootstrap().group(loop).channel(engine.serverChannel())
                .childHandler(new ShmChannelTest.LineCollector(lines)).bind("127.0.0.1", 0).sync().channel();
        return new Bootstrap().group(peer).channel(NioSocketChannel.class).handler(new ChannelInboundHandlerAdapter())
                .connect(listener.localAddress()).sync().channel();
    }

    private long loopThread() throws Exception {
        return loop.next().submit(() -> Thread.currentThread().threadId()).get(10, TimeUnit.SECONDS);
    }

    private void send(Channel client, String text) throws Exception {
        client.writeAndFlush(Unpooled.copiedBuffer(text, StandardCharsets.US_ASCII)).sync();
        assertEquals(text, lines.poll(10, TimeUnit.SECONDS), "the socket's bytes through the loop under test");
    }

    private static long cpuMillisOver(long thread, long millis) throws InterruptedException {
        long before = THREADS.getThreadCpuTime(thread);
        Thread.sleep(millis);
        return TimeUnit.NANOSECONDS.toMillis(THREADS.getThreadCpuTime(thread) - before);
    }
}
