package io.nucx;

import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.util.concurrent.Future;
import io.nucx.transport.IoEngine;
import io.nucx.transport.NucxConfig;
import io.nucx.transport.shm.ShmConfig;
import io.nucx.transport.shm.ShmIoHandler;
import io.nucx.wireup.WireupConfig;

import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The event loop group of {@link NucxChannel} and {@link NucxServerChannel}: each loop runs nucx's I/O engine (the shm
 * rings' {@link ShmIoHandler} around the configured TCP engine, io_uring, epoll or NIO), so one thread serves the
 * shm and tcp lanes of its channels, and gets a worker the first time one of its channels connects or is accepted.
 * An existing app changes only its group and its channel class:
 * <pre>{@code
 * EventLoopGroup group = new NucxEventLoopGroup();
 * new ServerBootstrap().group(group).channel(NucxServerChannel.class).childHandler(...).bind(8080);
 * new Bootstrap().group(group).channel(NucxChannel.class).handler(...).connect("localhost", 8080);
 * }</pre>
 * Its shutdown first closes the loops' workers (their endpoints gracefully), then the loops. A
 * {@code MultiThreadIoEventLoopGroup} made with {@link #newIoHandlerFactory()} works too, but its workers are only
 * dropped, not closed, when it shuts down. Configuration comes from {@code NUCX_*} variables and {@code nucx.*}
 * properties (NUCX_TCP_IO, NUCX_SHM_SPIN, NUCX_BUSY_POLL, NUCX_IDLE_SPINS, NUCX_IDLE_BACKOFF, and whatever the
 * workers read).
 */
public final class NucxEventLoopGroup extends MultiThreadIoEventLoopGroup {

    private final AtomicBoolean closing = new AtomicBoolean();

    /** As many loops as Netty's default (twice the processors). */
    public NucxEventLoopGroup() {
        this(0);
    }

    public NucxEventLoopGroup(int nThreads) {
        super(nThreads, newIoHandlerFactory());
    }

    public NucxEventLoopGroup(int nThreads, ThreadFactory threadFactory) {
        super(nThreads, threadFactory, newIoHandlerFactory());
    }

    /**
     * nucx's I/O engine as configured: the TCP engine of NUCX_TCP_IO wrapped in the shm engine, which spins
     * NUCX_SHM_SPIN (by default 300 us) before it parks (for ever with NUCX_BUSY_POLL), yielding its core between idle
     * passes as NUCX_IDLE_SPINS and NUCX_IDLE_BACKOFF say, by default soon (at once where a loop has no shm lanes)
     * and always: an app's own threads share these loops' cores. A bad value fails naming its variable.
     */
    public static IoHandlerFactory newIoHandlerFactory() {
        NucxConfig config = NucxConfig.fromEnvironment().validate();
        return newIoHandlerFactory(config, config.bool(NucxConfig.BUSY_POLL), true);
    }

    /**
     * nucx's I/O engine as {@code config} says, busy-polling or not as {@code busyPoll} says, idling as a group's
     * loop ({@code groupLoop}) or as a worker's own loop ({@link NucxBootstrap}) does. Busy-polling is done by the
     * shm engine, in non-blocking passes of the wrapped one: epoll's own busy wait spins in native code until a
     * socket is ready, and tasks and timers wait for it.
     */
    static IoHandlerFactory newIoHandlerFactory(NucxConfig config, boolean busyPoll, boolean groupLoop) {
        long spinNanos = ShmConfig.loopSpinNanos(config, busyPoll, groupLoop);
        return ShmIoHandler.newFactory(IoEngine.configured(config, spinNanos > 0).ioHandlerFactory(), spinNanos,
                WireupConfig.idleSpins(config, groupLoop), WireupConfig.socketIdleSpins(config, groupLoop),
                WireupConfig.idleBackoff(config, groupLoop));
    }

    @Override
    public Future<?> shutdownGracefully(long quietPeriod, long timeout, TimeUnit unit) {
        if (closing.compareAndSet(false, true)) {
            LoopWorkers.close(this).addListener(f -> super.shutdownGracefully(quietPeriod, timeout, unit));
        }
        return terminationFuture();
    }
}
