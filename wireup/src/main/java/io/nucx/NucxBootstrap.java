package io.nucx;

import io.netty.channel.ChannelHandler;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.nucx.transport.NucxConfig;
import io.nucx.transport.shm.ShmIoHandler;
import io.nucx.transport.IoEngine;
import io.nucx.wireup.Context;
import io.nucx.wireup.DefaultWorker;

import java.util.LinkedHashMap;
import java.util.Map;

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

    private EventLoopGroup group;
    private Context context;
    private final Map<String, String> overrides = new LinkedHashMap<>();
    private String name = "worker";
    private ChannelHandler endpointHandler;
    private Boolean busyPoll;

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

    /** Opens the ifaces and returns the running worker. */
    public Worker start() throws Exception {
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
            boolean spin = busyPoll != null ? busyPoll : ctx.config().bool(NucxConfig.BUSY_POLL);
            IoEngine mode = IoEngine.configured(ctx.config(), spin);
            // The shm engine wraps the TCP one, so one thread serves both kinds of lane.
            owned = new MultiThreadIoEventLoopGroup(1, new DefaultThreadFactory("nucx-" + name, true),
                    // Busy-polling is done by the shm engine, in non-blocking passes of the wrapped one: epoll's own
                    // busy wait spins in native code until a socket is ready, and tasks and timers wait for it.
                    ShmIoHandler.newFactory(mode.ioHandlerFactory(), spin ? Long.MAX_VALUE
                            : ctx.config().nanos(NucxConfig.SHM_SPIN, 10_000_000_000L)));
            loop = owned.next();
        }
        try {
            return DefaultWorker.start(ctx, loop, owned, name, endpointHandler);
        } catch (Exception | Error e) {
            if (owned != null) {
                owned.shutdownGracefully(0, 0, java.util.concurrent.TimeUnit.SECONDS);
            }
            throw e;
        }
    }
}
