package io.nucx;

import io.netty.channel.ChannelHandler;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.util.concurrent.BlockingOperationException;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.GlobalEventExecutor;
import io.netty.util.concurrent.Promise;
import io.netty.util.internal.logging.InternalLogger;
import io.netty.util.internal.logging.InternalLoggerFactory;
import io.nucx.transport.NucxConfig;
import io.nucx.transport.shm.ShmIoHandler;
import io.nucx.wireup.Context;
import io.nucx.wireup.DefaultWorker;
import io.nucx.wireup.WireupConfig;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * Starts a {@link Worker} the way a Netty bootstrap starts a server:
 * <pre>{@code
 * Worker worker = new NucxBootstrap()
 *         .group(myEventLoopGroup)                 // optional: share the threads of an existing Netty app
 *         .config("TLS", "tcp,self")               // optional: over NUCX_* variables
 *         .endpointHandler(new ChannelInitializer<Endpoint>() {
 *             protected void initChannel(Endpoint ep) { ep.pipeline().addLast(new MyHandler()); }
 *         })
 *         .start();
 * Endpoint ep = worker.connect(peerAddress);       // writable at once
 * ep.tagSend(42, buf);
 * }</pre>
 * Without a group the worker makes a one-thread group of the configured TCP engine wrapped in the shm engine
 * ({@link ShmIoHandler}) and shuts it down on close. A group of your own carries shm lanes only if it was made
 * the same way, e.g. {@code new MultiThreadIoEventLoopGroup(n, ShmIoHandler.newFactory(NioIoHandler.newFactory(),
 * 100_000))}; otherwise shm is left out of "all" (and named in NUCX_TLS, it stops start-up with the reason).
 */
public final class NucxBootstrap {

    private static final InternalLogger LOG = InternalLoggerFactory.getInstance(NucxBootstrap.class);

    private EventLoopGroup group;
    private Context context;
    private final Map<String, String> overrides = new LinkedHashMap<>();
    private String name = "worker";
    private ChannelHandler endpointHandler;
    private Boolean busyPoll;
    /** Counter of a worker's {@link io.nucx.protocol.ProtocolCounters}: messages its start-up warm-up exchanged. */
    public static final String WARMUP_MESSAGES = "warmup.messages";
    /** Counter: how long the warm-up took, nanoseconds (its two workers' start and close included). */
    public static final String WARMUP_NANOS = "warmup.nanos";
    /** Counter: of the warm-up's messages, those {@link Endpoint#trySendShort} copied into the transport at once. */
    public static final String WARMUP_SHORT_SENDS = "warmup.shortSends";
    /** Counter: of the warm-up's messages, those received into a receive's own buffer. */
    public static final String WARMUP_RECEIVED_INTO = "warmup.receivedInto";

    /** One of {@link WorkerWarmup}'s own workers: it does not warm up in turn. */
    private boolean warmingUp;

    /** The group whose next loop the worker binds to. */
    public NucxBootstrap group(EventLoopGroup group) {
        this.group = group;
        return this;
    }

    /** A context shared by several workers; otherwise one is made from the configuration. */
    public NucxBootstrap context(Context context) {
        this.context = context;
        return this;
    }

    /** A configuration override, e.g. {@code config("TLS", "tcp")}; wins over NUCX_* variables. */
    public NucxBootstrap config(String name, String value) {
        overrides.put(name, value);
        return this;
    }

    /** The worker's name, carried in its address for logs. */
    public NucxBootstrap name(String name) {
        this.name = name;
        return this;
    }

    /** Added to the pipeline of every endpoint, connected or accepted (typically a ChannelInitializer). */
    public NucxBootstrap endpointHandler(ChannelHandler handler) {
        this.endpointHandler = handler;
        return this;
    }

    /** Spin the worker's own loop instead of blocking (only for a group the worker makes itself). */
    public NucxBootstrap busyPoll(boolean busyPoll) {
        this.busyPoll = busyPoll;
        return this;
    }

    /** For {@link WorkerWarmup}: a worker that is part of a warm-up, so none of its own. */
    NucxBootstrap warmingUp() {
        this.warmingUp = true;
        return this;
    }

    /**
     * Opens the ifaces and returns the running worker. With {@code NUCX_WARMUP} set it first warms the JIT compiler up
     * for that long ({@link WorkerWarmup}); a warm-up that fails is logged and the worker returned all the same. It
     * waits for the worker's loop, so it must not run on that loop: there (in a handler, a listener, a task of the
     * group) use {@link #startAsync()}.
     *
     * @throws BlockingOperationException when called on the loop the worker would run on
     */
    public Worker start() throws Exception {
        Prepared p = prepare();
        if (p.loop.inEventLoop()) {
            p.abandon();
            throw new BlockingOperationException("NucxBootstrap.start() was called on " + Thread.currentThread()
                    .getName() + ", the event loop the worker would run on: start() waits for that loop to open the "
                    + "worker's ifaces, so it would wait for itself. Use startAsync() there, or call start() from "
                    + "another thread");
        }
        return p.start();
    }

    /**
     * Starts the worker without blocking the caller: the ifaces open from a helper thread (the loop itself only runs
     * their registrations), and the future, notified on the worker's loop, gets the running worker or why it could
     * not start. Safe on any thread, the worker's own loop included.
     */
    public Future<Worker> startAsync() {
        Prepared p;
        try {
            p = prepare();
        } catch (Exception | Error e) {
            return GlobalEventExecutor.INSTANCE.newFailedFuture(e);
        }
        Promise<Worker> result = p.loop.newPromise();
        try {
            STARTER.execute(() -> {
                try {
                    result.trySuccess(p.start());
                } catch (Throwable e) {
                    result.tryFailure(e);
                }
            });
        } catch (RuntimeException e) {
            p.abandon();
            result.tryFailure(e);
        }
        return result;
    }

    /** Starts workers for {@link #startAsync()}: a blocking start may take a few milliseconds (sockets, shm files). */
    private static final ExecutorService STARTER = new ThreadPoolExecutor(0, Integer.MAX_VALUE, 10, TimeUnit.SECONDS,
            new SynchronousQueue<>(), new DefaultThreadFactory("nucx-start", true));

    /** The configuration parsed and the loop chosen (or made): what a start needs before it may block. */
    private Prepared prepare() {
        Context ctx = context;
        if (ctx == null) {
            ctx = Context.create(NucxConfig.of(overrides));
        } else if (!overrides.isEmpty()) {
            throw new IllegalStateException("give config overrides to the Context, not to the bootstrap, when you "
                    + "pass a Context");
        }
        EventLoopGroup owned = null;
        EventLoop loop;
        if (group != null) {
            loop = group.next();
        } else {
            boolean spin = busyPoll != null ? busyPoll : ctx.config().get(WireupConfig.BUSY_POLL);
            // The shm engine wraps the TCP one, so one thread serves both kinds of lane.
            owned = new MultiThreadIoEventLoopGroup(1, new DefaultThreadFactory("nucx-" + name, true),
                    ownLoopIoHandlerFactory(ctx.config(), spin));
            loop = owned.next();
        }
        long warmup = warmingUp ? 0 : ctx.config().get(WireupConfig.WARMUP);
        return new Prepared(ctx, loop, owned, name, endpointHandler, busyPoll, warmup);
    }

    /**
     * The engine of the loop a bootstrap makes when given no group: idling as a worker's own loop, whose thread is its
     * app's (perftest, the demo), not as a group's loop that shares its cores with an app's threads.
     */
    static IoHandlerFactory ownLoopIoHandlerFactory(NucxConfig config, boolean busyPoll) {
        return NucxEventLoopGroup.newIoHandlerFactory(config, busyPoll, false);
    }

    private record Prepared(Context ctx, EventLoop loop, EventLoopGroup owned, String name, ChannelHandler handler,
                            Boolean busyPoll, long warmupNanos) {
        Worker start() throws Exception {
            Worker w;
            try {
                AllocatorPrimer.primeOnce(); // here, not on the loop: before the worker's loop has its work
                w = DefaultWorker.start(ctx, loop, owned, name, handler);
            } catch (Exception | Error e) {
                abandon();
                throw e;
            }
            if (warmupNanos > 0) {
                warmUp(w);
            }
            return w;
        }

        /**
         * Only a faster start is at stake: a warm-up that fails says why and the worker runs as without one. The
         * worker's counters keep what it did: {@code warmup.messages} exchanged in {@code warmup.nanos}.
         */
        private void warmUp(Worker w) {
            long t0 = System.nanoTime();
            try {
                long n = WorkerWarmup.run(w, ctx, name, busyPoll, warmupNanos);
                long took = System.nanoTime() - t0;
                w.counters().counter(WARMUP_MESSAGES).add(n);
                w.counters().counter(WARMUP_NANOS).add(took);
                LOG.debug("{}: warmed up with {} messages in {} ms", name, n, took / 1_000_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                LOG.warn("{}: warm-up interrupted; the worker starts without it", name);
            } catch (Exception e) {
                LOG.warn("{}: warm-up (NUCX_WARMUP) failed; the worker starts without it", name, e);
            }
        }

        void abandon() {
            if (owned != null) {
                owned.shutdownGracefully(0, 0, TimeUnit.SECONDS);
            }
        }
    }
}
