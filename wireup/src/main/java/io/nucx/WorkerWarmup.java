package io.nucx;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import io.nucx.protocol.tag.TagMessage;
import io.nucx.protocol.tag.TagReceive;
import io.nucx.wireup.Context;

import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.LongAdder;

/**
 * Warms the JIT compiler up before a worker is handed over ({@code NUCX_WARMUP}): the started worker ping-pongs tagged
 * messages with a private worker of its settings (its context, so the same transports and limits) for the given time,
 * then the private worker closes. Compiled code belongs to the methods, so the worker's first real messages run
 * compiled send and receive paths instead of the interpreter's and the profiling tier's; and since the started
 * worker itself takes part, its own loop thread and its accepted and connected channels are on those paths already.
 *
 * <p>What it does is varied on purpose, as applications vary, so that the compiler compiles the type checks and
 * branches on those paths for what comes later rather than speculating on one kind of message, which the first real
 * message of another kind would undo (a deoptimisation, and the method back to the profiling tier): 8-byte messages
 * (eager short) with a 1 KiB one every {@value #MEDIUM_EVERY}th (a longer copy; still eager short on shm and tcp, whose
 * short limits are the segment and 8 KiB, eager bcopy on a transport with a smaller one); payloads that are pooled
 * direct slices and duplicates, unpooled heap arrays and pooled heap buffers; sent as a {@code ByteBuf} under the
 * endpoint's {@code SEND_TAG}, as a {@link TagMessage} with the void promise, through {@link Endpoint#tagSend} and
 * through {@link Endpoint#trySendShort} (the copy into the transport with no object per message); received by reusable
 * receives of three classes (so the call to a receive's handler compiles as a virtual call, not as a guess at one or
 * two classes), one of them into a buffer of its own ({@link TagReceive.Handler#receivedInto}, the payload copied from
 * the transport straight there), and by future receives, {@value #IN_FLIGHT} messages in flight; and every
 * {@value #ROUND_MILLIS} ms the two endpoints close and new ones wire up. The started worker's receives are future
 * ones, so a warm-up that fails leaves none posted: the worker is handed over with no endpoint, receive or message of
 * the warm-up's. Its traffic counters do include the warm-up's messages ({@code warmup.messages} says how many).
 */
final class WorkerWarmup {

    /** Every this many messages one is {@link #MEDIUM} bytes, so the copies compile for more than one size. */
    static final int MEDIUM_EVERY = 8;
    static final int SMALL = 8;
    static final int MEDIUM = 1024;
    /**
     * Pings the pinger keeps unanswered: with loops that block, a strict ping-pong pays a wake-up per message and
     * would run too few messages for the compiler to act on.
     */
    static final int IN_FLIGHT = 16;
    /** Endpoints are closed and wired up again this often, so wireup and close are not the first after compiling. */
    static final long ROUND_MILLIS = 100;
    /** Tags of the warm-up's own (no user's receive can be posted on a worker not yet handed over). */
    private static final long PING = 0x6e75_6378_7069_6e67L;
    private static final long PONG = 0x6e75_6378_706f_6e67L;
    /** Kinds of payload ({@link #payload}) and of send call ({@link #send}) the messages rotate through. */
    private static final int PAYLOAD_KINDS = 4;
    private static final int SEND_KINDS = 4;

    private final Worker pinger;
    private final Worker ponger;
    private final ByteBuf small = PooledByteBufAllocator.DEFAULT.directBuffer(SMALL, SMALL).writeZero(SMALL);
    private final ByteBuf medium = PooledByteBufAllocator.DEFAULT.directBuffer(MEDIUM, MEDIUM).writeZero(MEDIUM);
    private final byte[] heap = new byte[MEDIUM];
    /** Where {@link #pingsB} receives (the ponger's loop alone touches it). */
    private final ByteBuf pingsInto = PooledByteBufAllocator.DEFAULT.directBuffer(MEDIUM, MEDIUM);
    /** The round in progress: its end, its endpoints, its outcome, the pinger's receive waiting for a pong. */
    private volatile long roundEnd;
    private volatile Endpoint toPonger;
    private volatile Endpoint toPinger;
    private volatile Promise<Void> round;
    /** The pinger's receives waiting for pongs, oldest first (cancelled from the caller when a round fails). */
    private final Queue<Future<TagMessage>> pendingPongs = new ConcurrentLinkedQueue<>();
    /** Round trips done, pings not yet answered (pinger's loop), pongs sent (ponger's loop). */
    private long exchanged;
    private int inFlight;
    private long answered;
    /** Sends trySendShort took (both loops), pings received into {@link #pingsInto} (the ponger's loop). */
    private final LongAdder shortSends = new LongAdder();
    private final LongAdder receivedInto = new LongAdder();

    private WorkerWarmup(Worker pinger, Worker ponger) {
        this.pinger = pinger;
        this.ponger = ponger;
    }

    /**
     * Runs the warm-up of {@code started} for {@code nanos} with a private worker of {@code context}; returns the
     * messages exchanged (pings and pongs).
     *
     * @throws Exception when the private worker cannot start or connect, or the exchange fails
     */
    static long run(Worker started, Context context, String name, Boolean busyPoll, long nanos) throws Exception {
        long deadline = System.nanoTime() + nanos;
        Worker ponger = null;
        WorkerWarmup w = null;
        try {
            NucxBootstrap b = new NucxBootstrap().context(context).name(name + "-warmup").warmingUp();
            if (busyPoll != null) {
                b.busyPoll(busyPoll);
            }
            ponger = b.start();
            w = new WorkerWarmup(started, ponger);
            ponger.tagRecv(w.pingsA); // the ponger's receives are the worker's, not an endpoint's: they outlast rounds
            do {
                w.round(Math.min(deadline, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ROUND_MILLIS)));
            } while (System.nanoTime() - deadline < 0);
            started.counters().counter(NucxBootstrap.WARMUP_SHORT_SENDS).add(w.shortSends.sum());
            started.counters().counter(NucxBootstrap.WARMUP_RECEIVED_INTO).add(w.receivedInto.sum());
            return 2 * w.exchanged;
        } finally {
            boolean pongerClosed = ponger == null || ponger.close().await(10, TimeUnit.SECONDS);
            if (w != null) {
                w.small.release();
                w.medium.release();
                if (pongerClosed) {
                    w.pingsInto.release();
                } // else a ping may still land in it: left to the leak detector rather than written after its release
            }
        }
    }

    /** One round: two new endpoints, ping-pong until {@code end}, both endpoints closed. */
    private void round(long end) throws Exception {
        roundEnd = end;
        round = pinger.eventLoop().newPromise();
        toPonger = pinger.connect(ponger.address());
        toPinger = ponger.connect(pinger.address());
        try {
            toPonger.config().setOption(EndpointOption.SEND_TAG, PING);
            toPinger.config().setOption(EndpointOption.SEND_TAG, PONG);
            pinger.eventLoop().execute(() -> {
                for (int i = 0; i < IN_FLIGHT; i++) {
                    ping();
                }
            });
            long waitNanos = Math.max(0, end - System.nanoTime()) + TimeUnit.SECONDS.toNanos(10);
            if (!round.await(waitNanos, TimeUnit.NANOSECONDS)) {
                round.tryFailure(new TimeoutException("the warm-up exchanged " + exchanged
                        + " messages and then none for 10 s"));
            }
            round.sync();
        } finally {
            for (Future<TagMessage> pong; (pong = pendingPongs.poll()) != null; ) {
                pong.cancel(false); // a failed round: the started worker keeps no receive of the warm-up's
            }
            toPonger.close().await(10, TimeUnit.SECONDS);
            toPinger.close().await(10, TimeUnit.SECONDS);
        }
    }

    /** The pinger's next ping, with a future receive for its pong; a pong sends the next until the round ends. */
    private void ping() {
        Future<TagMessage> pong = pinger.tagRecv(PONG, -1L);
        pendingPongs.add(pong);
        inFlight++;
        pong.addListener((Future<TagMessage> f) -> {
            pendingPongs.remove(f);
            inFlight--;
            if (!f.isSuccess()) {
                round.tryFailure(f.cause());
                return;
            }
            f.getNow().release();
            exchanged++;
            if (System.nanoTime() - roundEnd < 0) {
                ping();
            } else if (inFlight == 0) {
                round.trySuccess(null);
            }
        });
        send(toPonger, PING, exchanged % MEDIUM_EVERY == 0 ? MEDIUM : SMALL, exchanged);
    }

    /**
     * The ponger answers each ping with as many bytes; three receives of three classes take the pings in turn, the
     * second into a buffer.
     */
    private final TagReceive pingsA = TagReceive.reusable(PING, -1L, new PingsA());
    private final TagReceive pingsB = TagReceive.reusable(PING, -1L, pingsInto, new PingsB());
    private final TagReceive pingsC = TagReceive.reusable(PING, -1L, new PingsC());

    /** The ponger's handlers: one behaviour, three classes on purpose (see the class comment). */
    private abstract class PingHandler implements TagReceive.Handler {
        @Override
        public void failed(Throwable cause) {
            round.tryFailure(cause);
        }
    }

    private final class PingsA extends PingHandler {
        @Override
        public void received(long tag, ByteBuf data) {
            pong(data, pingsB);
        }
    }

    private final class PingsB extends PingHandler {
        @Override
        public void received(long tag, ByteBuf data) {
            pong(data, pingsC);
        }

        @Override
        public void receivedInto(long tag, ByteBuf into, int index, int length) {
            into.clear(); // room again for the next ping
            receivedInto.increment();
            pong(length, pingsC);
        }
    }

    private final class PingsC extends PingHandler {
        @Override
        public void received(long tag, ByteBuf data) {
            pong(data, pingsA);
        }
    }

    private void pong(ByteBuf ping, TagReceive next) {
        int size = ping.readableBytes();
        ping.release();
        pong(size, next);
    }

    private void pong(int size, TagReceive next) {
        if (!round.isDone()) {
            ponger.tagRecv(next);
            send(toPinger, PONG, size, answered++);
        }
    }

    /** Message {@code n} of one side: its payload kind and send call both rotate. */
    private void send(Endpoint ep, long tag, int size, long n) {
        ByteBuf data = payload(size, (int) (n % PAYLOAD_KINDS));
        switch ((int) (n / PAYLOAD_KINDS % SEND_KINDS)) {
            case 0 -> ep.writeAndFlush(data, ep.voidPromise());
            case 1 -> ep.writeAndFlush(new TagMessage(tag, data), ep.voidPromise());
            case 2 -> {
                if (ep.trySendShort(tag, data)) { // copied: the payload is still ours
                    shortSends.increment();
                    data.release();
                    ep.flush();
                } else {
                    ep.writeAndFlush(data, ep.voidPromise());
                }
            }
            default -> ep.tagSend(tag, data).addListener(f -> {
                if (!f.isSuccess()) {
                    round.tryFailure(f.cause());
                }
            });
        }
    }

    private ByteBuf payload(int size, int kind) {
        return switch (kind) {
            case 0 -> medium.retainedSlice(0, size);
            case 1 -> (size == SMALL ? small : medium).retainedDuplicate();
            case 2 -> Unpooled.wrappedBuffer(heap, 0, size);
            default -> PooledByteBufAllocator.DEFAULT.heapBuffer(size, size).writeBytes(heap, 0, size);
        };
    }
}
