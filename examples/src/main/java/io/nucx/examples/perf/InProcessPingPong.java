package io.nucx.examples.perf;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.channel.EventLoopGroup;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.GenericFutureListener;
import io.netty.util.concurrent.Promise;
import io.nucx.Endpoint;
import io.nucx.EndpointOption;
import io.nucx.NucxBootstrap;
import io.nucx.Worker;
import io.nucx.protocol.tag.TagMessage;
import io.nucx.protocol.tag.TagReceive;

import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * Two busy-polling workers of this JVM playing tagged ping-pong over one transport, for measurements that need both
 * sides in one process (JMH's GC profiler, the allocation test, self): {@link #run} does that many round trips on the
 * loops, the caller's thread only waiting for the last. One round trip: the client posts a receive for PONG and
 * sends PING; the server, which has a receive posted for PING, answers PONG and posts again.
 */
public final class InProcessPingPong implements AutoCloseable {

    static final long PING = 1;
    static final long PONG = 2;
    /** {@link Api#AM}'s user header, bytes. */
    static final int AM_HEADER = 16;

    /** How the two sides call nucx. */
    public enum Api {
        /** {@code tagRecv} futures and {@code TagMessage} writes with the void promise. */
        FUTURE,
        /**
         * What allocates nothing per message: a {@linkplain TagReceive#reusable reusable} receive posted again from its
         * handler, and writes of a pooled buffer's retained duplicate under the endpoint's {@code SEND_TAG}, with the
         * void promise.
         */
        REUSED,
        /** As {@link #REUSED}, each receive writing into a buffer of its own, as ucx_perftest's receive buffer. */
        INTO,
        /**
         * As {@link #INTO}, sent with {@link Endpoint#trySendShort} (copied into the transport at once, the buffer kept:
         * no duplicate, no reference count), as perftest's tag_lat and ucx_perftest send.
         */
        SHORT,
        /**
         * Active messages both ways with a 16-byte user header, sent with {@link Endpoint#tryAmSendShort} (falling back
         * to {@code amSend} where it says false), each handler leaving the data alone (as ucx_perftest's ucp_am tests):
         * per message, the handler's {@code AmMessage} handle is all that is left to allocate.
         */
        AM;

        public static Api of(String name) {
            return valueOf(name.toUpperCase(Locale.ROOT));
        }
    }

    private final Worker client;
    private final Worker server;
    private final Endpoint toServer;
    private final Endpoint toClient;
    private final ByteBuf ping;
    private final ByteBuf pong;
    /** {@link Api#AM}: the user header both sides send. */
    private final ByteBuf amHeader;
    private final GenericFutureListener<Future<TagMessage>> onPing = this::onPing;
    private final GenericFutureListener<Future<TagMessage>> onPong = this::onPong;
    private final Api api;
    private final TagReceive pingReceive;
    private final TagReceive pongReceive;
    /** {@link Api#INTO}: the receives' buffers; else null. */
    private final ByteBuf pingInto;
    private final ByteBuf pongInto;

    /** Client loop only. */
    private long remaining;
    private Promise<Long> done;
    private long rounds;

    private InProcessPingPong(Worker client, Worker server, Endpoint toServer, Endpoint toClient, int size, Api api) {
        this.client = client;
        this.server = server;
        this.toServer = toServer;
        this.toClient = toClient;
        this.api = api;
        // Pooled: their retained duplicates are recycled objects, so a send allocates nothing on the user's side.
        this.ping = PooledByteBufAllocator.DEFAULT.directBuffer(size).writeZero(size);
        this.pong = PooledByteBufAllocator.DEFAULT.directBuffer(size).writeZero(size);
        this.amHeader = PooledByteBufAllocator.DEFAULT.directBuffer(AM_HEADER).writeZero(AM_HEADER);
        if (api == Api.AM) {
            server.setAmHandler(PerfTags.AM_PING, m -> onPing());
            client.setAmHandler(PerfTags.AM_PONG, m -> onPong());
        }
        boolean into = api == Api.INTO || api == Api.SHORT;
        this.pingInto = into ? PooledByteBufAllocator.DEFAULT.directBuffer(size, size) : null;
        this.pongInto = into ? PooledByteBufAllocator.DEFAULT.directBuffer(size, size) : null;
        this.pingReceive = PerfTags.discarding(PING, pingInto, this::onPing, cause -> {
            // the worker closes
        });
        this.pongReceive = PerfTags.discarding(PONG, pongInto, this::onPong, cause -> done.tryFailure(cause));
        toServer.config().setOption(EndpointOption.SEND_TAG, PING);
        toClient.config().setOption(EndpointOption.SEND_TAG, PONG);
    }

    /** Starts both workers over {@code tls}, busy-polling, and wires them up; the server waits for PING. */
    public static InProcessPingPong start(String tls, int size, Api api) throws Exception {
        return start(tls, size, api, true);
    }

    /** As {@link #start(String, int, Api)}; {@code busyPoll} false: loops that block when idle (the default). */
    public static InProcessPingPong start(String tls, int size, Api api, boolean busyPoll) throws Exception {
        return start(tls, size, api, busyPoll, null);
    }

    /**
     * As {@link #start(String, int, Api, boolean)}, both workers on {@code group}'s loops when it is not null: with a
     * group of one loop, a round trip is the send and receive paths' CPU work on one thread, with no core-to-core
     * transfer and no spinning wait in it.
     */
    public static InProcessPingPong start(String tls, int size, Api api, boolean busyPoll,
                                          EventLoopGroup group) throws Exception {
        Worker server = new NucxBootstrap().name("pp-server").busyPoll(busyPoll).group(group).config("TLS", tls)
                .start();
        Worker client = null;
        try {
            client = new NucxBootstrap().name("pp-client").busyPoll(busyPoll).group(group).config("TLS", tls)
                    .start();
            Endpoint toServer = client.connect(server.address());
            toServer.wireupFuture().get(30, TimeUnit.SECONDS);
            Endpoint toClient = server.endpoints().iterator().next();
            InProcessPingPong pp = new InProcessPingPong(client, server, toServer, toClient, size, api);
            server.eventLoop().submit(pp::postPing).get(10, TimeUnit.SECONDS);
            return pp;
        } catch (Exception | Error e) {
            if (client != null) {
                client.close().get(10, TimeUnit.SECONDS);
            }
            server.close().get(10, TimeUnit.SECONDS);
            throw e;
        }
    }

    /** Bytes both workers' loop threads have allocated so far (each read on its own loop). */
    public long loopAllocatedBytes() throws Exception {
        return client.eventLoop().submit(PerfAllocation::current).get(30, TimeUnit.SECONDS)
                + server.eventLoop().submit(PerfAllocation::current).get(30, TimeUnit.SECONDS);
    }

    /** The client's worker (its loop runs the measured side). */
    public Worker client() {
        return client;
    }

    public Worker server() {
        return server;
    }

    /** Runs {@code n} round trips; returns the number of round trips done so far in total. */
    public long run(long n) throws Exception {
        Promise<Long> p = client.eventLoop().newPromise();
        client.eventLoop().execute(() -> {
            done = p;
            remaining = n;
            sendPing();
        });
        return p.get(600, TimeUnit.SECONDS);
    }

    // ------------------------------------------------------------ client loop

    private void sendPing() {
        if (api == Api.AM) {
            sendAm(toServer, PerfTags.AM_PING, ping);
            return;
        }
        if (api == Api.SHORT && toServer.trySendShort(PING, ping)) {
            toServer.flush();
            client.tagRecv(pongReceive);
            return;
        }
        if (api != Api.FUTURE) {
            client.tagRecv(pongReceive);
            toServer.writeAndFlush(ping.retainedDuplicate(), toServer.voidPromise());
            return;
        }
        client.tagRecv(PONG, -1L).addListener(onPong);
        toServer.writeAndFlush(new TagMessage(PING, ping.retainedDuplicate()), toServer.voidPromise());
    }

    private void onPong(Future<TagMessage> f) {
        if (!f.isSuccess()) {
            done.tryFailure(f.cause());
            return;
        }
        f.getNow().release();
        onPong();
    }

    private void onPong() {
        rounds++;
        if (--remaining > 0) {
            sendPing();
        } else {
            done.trySuccess(rounds);
        }
    }

    // ------------------------------------------------------------ server loop

    /** An active message of {@code id} with the user header and {@code data}, copied now if it can be. */
    private void sendAm(Endpoint ep, int id, ByteBuf data) {
        if (ep.tryAmSendShort(id, amHeader, data, false)) {
            ep.flush();
        } else {
            ep.amSend(id, amHeader.retainedDuplicate(), data.retainedDuplicate());
        }
    }

    private void postPing() {
        if (api == Api.AM) {
            return; // its handler is registered
        }
        if (api != Api.FUTURE) {
            server.tagRecv(pingReceive);
        } else {
            server.tagRecv(PING, -1L).addListener(onPing);
        }
    }

    private void onPing(Future<TagMessage> f) {
        if (!f.isSuccess()) {
            return; // the worker closes
        }
        f.getNow().release();
        onPing();
    }

    private void onPing() {
        postPing();
        if (api == Api.AM) {
            sendAm(toClient, PerfTags.AM_PONG, pong);
        } else if (api == Api.SHORT && toClient.trySendShort(PONG, pong)) {
            toClient.flush();
        } else if (api != Api.FUTURE) {
            toClient.writeAndFlush(pong.retainedDuplicate(), toClient.voidPromise());
        } else {
            toClient.writeAndFlush(new TagMessage(PONG, pong.retainedDuplicate()), toClient.voidPromise());
        }
    }

    @Override
    public void close() throws Exception {
        try {
            client.close().get(10, TimeUnit.SECONDS);
        } finally {
            server.close().get(10, TimeUnit.SECONDS);
            ping.release();
            pong.release();
            amHeader.release();
            if (pingInto != null) {
                pingInto.release();
                pongInto.release();
            }
        }
    }
}
