package io.nucx.protocol.amo;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.util.concurrent.Future;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.EndpointServices;
import io.nucx.protocol.KeyBundle;
import io.nucx.protocol.LimitExceededException;
import io.nucx.protocol.PendingRequests;
import io.nucx.protocol.ProtocolCodec;
import io.nucx.protocol.ProtocolCounters;
import io.nucx.protocol.ProtocolException;
import io.nucx.protocol.ProtocolFamily;
import io.nucx.protocol.ReceiveLimits;
import io.nucx.protocol.RmaRail;
import io.nucx.transport.AmFrame;
import io.nucx.transport.rma.InvalidRemoteKeyException;
import io.nucx.transport.rma.RemoteKey;
import io.nucx.transport.rma.RmaOp;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;

/**
 * The atomics codec on one endpoint. With an AMO lane (UCX's device atomics: a transport with ATOMIC64 on both sides,
 * rdma) fetch-add and compare-and-swap go to the device as {@link RmaOp}s, with the key the owner registered on the
 * device that lane reaches ({@code amo/device}); everything else (swap, and, or, xor, which verbs lacks, and every
 * atomic without such a lane or key) goes as UCX's software atomics ({@code amo/am}): an outbound
 * {@link AtomicRequest} becomes an ATOMIC_REQ frame and waits for ATOMIC_REP; an arriving ATOMIC_REQ is applied to this
 * worker's registered memory with the CPU's atomic instructions (a {@link VarHandle} on the native word, so local code
 * using atomics on the same words stays coherent with peers) and answered. A request for another worker's memory, a
 * misaligned address or one outside the key's region fails at once, naming it, and sends nothing; a request the
 * target's memory does not allow is answered with a status and only that request fails; a malformed frame is a
 * {@link ProtocolException} (the lane closes).
 *
 * <p>Coherence: the emulator applies device atomics with the CPU's instructions, so both paths mix freely in tests.
 * A real adapter's atomics are atomic with respect to other device atomics only (UCX's ATOMIC_DEVICE mode): on
 * hardware, words one peer changes by fetch-add or compare-and-swap over rdma should not be changed at the same time
 * by active-message atomics or by the owner's CPU.
 *
 * <p><b>Backlogs.</b> Answers go only to a lane that takes them: while the endpoint is not writable (the peer does not
 * read), arriving requests wait unapplied, in order, and are applied and answered as it becomes writable again; more
 * than NUCX_REPLY_BACKLOG of them fails the endpoint ({@link LimitExceededException}), so a peer that never reads
 * makes this side hold a bounded backlog, not an unbounded queue of answers. As a sender it keeps at most that many
 * atomics unanswered on the endpoint, device atomics included (later ones wait here, in order), so a well-behaved
 * peer never reaches the bound on the other side.
 */
public final class AmoCodec extends ChannelDuplexHandler implements ProtocolCodec {

    /** Its name in an endpoint's pipeline. */
    public static final String NAME = "nucx.amo";

    /** The atomics family: no protocol to select (the AMO lane decides), two AM ids for the software path. */
    public static final ProtocolFamily FAMILY = new ProtocolFamily("amo/am", List.of(),
            new int[] {AmIds.ATOMIC_REQ, AmIds.ATOMIC_REP}, (pipeline, endpoint, worker) -> {
                AmoCodec codec = new AmoCodec(worker.memory(), endpoint, worker.counters(),
                        worker.limits().replyBacklog());
                pipeline.addLast(NAME, codec);
                return codec;
            });

    /** Counters ({@link ProtocolCounters}): atomics the device ran, and atomics sent as active messages. */
    public static final String DEVICE_COUNTER = "amo/device";
    public static final String AM_COUNTER = "amo/am";

    private static final VarHandle WORD = ValueLayout.JAVA_LONG.varHandle();

    private final MemoryRegistry memory;
    private final LongSupplier peerUuid;
    private final EndpointServices endpoint;
    private final LongAdder deviceCount;
    private final LongAdder amCount;
    private final PendingRequests<AtomicRequest> requests = new PendingRequests<>();
    private final int backlog;
    /** Our atomics past the window, with their write promises, waiting for answers to come back. */
    private final ArrayDeque<Object[]> waitingToSend = new ArrayDeque<>();
    /** The peer's ATOMIC_REQ frames waiting for the lane to take their answers. */
    private final ArrayDeque<AmFrame> unanswered = new ArrayDeque<>();
    /** Answers written in this read batch and not yet flushed. */
    private boolean answeredInBatch;

    /**
     * Atomics as active messages only.
     *
     * @param peerUuid the uuid of the worker this endpoint talks to (keys name the worker that owns the memory)
     */
    public AmoCodec(MemoryRegistry memory, LongSupplier peerUuid) {
        this(memory, peerUuid, Integer.MAX_VALUE);
    }

    /** @param backlog NUCX_REPLY_BACKLOG: requests whose answers may wait, and our atomics unanswered at once */
    public AmoCodec(MemoryRegistry memory, LongSupplier peerUuid, int backlog) {
        this.memory = memory;
        this.peerUuid = peerUuid;
        this.endpoint = null;
        this.deviceCount = new LongAdder();
        this.amCount = new LongAdder();
        this.backlog = backlog;
    }

    /** Atomics on {@code endpoint}'s AMO lane where it has one, else as active messages. */
    public AmoCodec(MemoryRegistry memory, EndpointServices endpoint, ProtocolCounters counters, int backlog) {
        this.memory = memory;
        this.peerUuid = endpoint::peerUuid;
        this.endpoint = endpoint;
        this.deviceCount = counters.counter(DEVICE_COUNTER);
        this.amCount = counters.counter(AM_COUNTER);
        this.backlog = backlog;
    }

    /**
     * Atomics written while an endpoint with an AMO lane wires up: they wait for its lanes, to go to the device. (An
     * endpoint without one writes them as active messages at once, which its stub queues like any write.)
     */
    private ArrayDeque<Object[]> early;
    /** Atomics replayed per loop turn after the wireup: reads (and keepalive) go on between batches. */
    private static final int REPLAY_BATCH = 256;

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        Future<Void> wired = endpoint == null || !endpoint.hasAmoLane() ? null : endpoint.wireupFuture();
        if (wired != null && !wired.isDone()) {
            early = new ArrayDeque<>();
            // a task of its own: the lanes that completed the wireup connect in the same turn
            wired.addListener(f -> ctx.executor().execute(() -> replay(ctx)));
        }
    }

    /** Writes the next batch of what waited for the wireup, in order; later atomics queue behind the rest. */
    private void replay(ChannelHandlerContext ctx) {
        if (early == null) {
            return; // the endpoint ended meanwhile and failed them
        }
        for (int i = 0; i < REPLAY_BATCH && !early.isEmpty(); i++) {
            Object[] w = early.poll();
            ArrayDeque<Object[]> waiting = early;
            early = null; // write() sends now
            write(ctx, w[0], (ChannelPromise) w[1]);
            early = waiting;
        }
        ctx.flush();
        if (early.isEmpty()) {
            early = null;
        } else {
            // A timer due at once, not a task: Netty runs the tasks queued during a batch of tasks in that batch, and
            // takes timers only when a batch begins, after the turn's I/O. A task would replay every batch in one.
            ctx.executor().schedule(() -> replay(ctx), 0, TimeUnit.NANOSECONDS).addListener(f -> {
                if (f.isCancelled()) {
                    replayCancelled();
                }
            });
        }
    }

    /**
     * Nothing cancels the next replay but the loop shutting down (Netty cancels a loop's timers then): the atomics
     * still waiting fail, saying so, rather than wait for ever.
     */
    private void replayCancelled() {
        if (early != null) {
            RejectedExecutionException cause = new RejectedExecutionException("atomics written during the wireup: "
                    + "the endpoint's event loop shut down with " + early.size() + " of them not yet sent");
            for (Object[] w; (w = early.poll()) != null; ) {
                ((AtomicRequest) w[0]).result().tryFailure(cause);
                ((ChannelPromise) w[1]).tryFailure(cause);
            }
            early = null;
        }
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        if (!(msg instanceof AtomicRequest r)) {
            ctx.write(msg, promise);
            return;
        }
        if (early != null) {
            early.add(new Object[] {r, promise});
            return;
        }
        String refusal = r.key().workerUuid() != peerUuid.getAsLong()
                ? "the key belongs to worker " + Long.toHexString(r.key().workerUuid()) + ", this endpoint reaches "
                + Long.toHexString(peerUuid.getAsLong())
                : r.address() % 8 != 0 ? "address " + Long.toHexString(r.address()) + " is not 8-byte aligned"
                : !r.key().covers(r.address()) ? "address " + Long.toHexString(r.address()) + " is outside region "
                + r.key().region() + " [" + Long.toHexString(r.key().base()) + ", +" + r.key().length() + ")"
                : null;
        if (refusal != null) {
            IllegalArgumentException e = new IllegalArgumentException(r.op() + ": " + refusal);
            r.result().tryFailure(e);
            promise.tryFailure(e);
            return;
        }
        if (requests.size() >= backlog || !waitingToSend.isEmpty()) {
            waitingToSend.add(new Object[] {r, promise});
            return;
        }
        send(ctx, r, promise);
    }

    private void send(ChannelHandlerContext ctx, AtomicRequest r, ChannelPromise promise) {
        long id = requests.add(r);
        if (onDevice(ctx, r, id, promise)) {
            return;
        }
        amCount.increment();
        ByteBuf header = ctx.alloc().buffer(AmoHeaders.REQ_LENGTH).writeLongLE(id).writeLongLE(r.address())
                .writeLongLE(r.value()).writeLongLE(r.compare()).writeIntLE(r.key().region())
                .writeByte(r.op().wire()).writeZero(3).writeLongLE(r.key().secret());
        // A void promise cannot be listened to: a real one that still reports a failure to the pipeline as it would
        ChannelPromise written = promise.isVoid() ? promise.unvoid() : promise;
        written.addListener((ChannelFutureListener) f -> {
            AtomicRequest failed;
            if (!f.isSuccess() && (failed = requests.remove(id)) != null) {
                failed.result().tryFailure(f.cause());
            }
        });
        ctx.write(AmFrame.of(AmIds.ATOMIC_REQ, header), written);
    }

    /**
     * Runs {@code r} on the AMO lane when the device can (fetch-add, compare-and-swap) and the key carries the
     * owner's key for the device the lane reaches; its result, or failure, completes {@code r} and {@code promise}.
     * False when it goes as an active message instead.
     */
    private boolean onDevice(ChannelHandlerContext ctx, AtomicRequest r, long id, ChannelPromise promise) {
        RmaRail amo = endpoint == null || (r.op() != AtomicOp.ADD && r.op() != AtomicOp.CSWAP) ? null
                : endpoint.amoRail();
        RmaOp.Kind kind = r.op() == AtomicOp.ADD ? RmaOp.Kind.FETCH_ADD : RmaOp.Kind.COMPARE_SWAP;
        byte[] packed = amo == null || !amo.lane().supports(kind) || r.key().transportKeys().length == 0 ? null
                : KeyBundle.keyFor(r.key().keys(), amo.remoteEntry());
        if (packed == null) {
            return false;
        }
        RemoteKey key;
        try {
            key = amo.lane().unpackKey(Unpooled.wrappedBuffer(packed));
        } catch (InvalidRemoteKeyException e) {
            requests.remove(id);
            IllegalArgumentException bad = new IllegalArgumentException(r.op() + ": the key's device key for "
                    + amo.name() + " is refused: " + e.getMessage(), e);
            r.result().tryFailure(bad);
            promise.tryFailure(bad);
            return true;
        }
        long offset = r.address() - key.address();
        RmaOp op = r.op() == AtomicOp.ADD ? RmaOp.fetchAdd(key, offset, r.value())
                : RmaOp.compareAndSwap(key, offset, r.compare(), r.value());
        deviceCount.increment();
        amo.lane().channel().writeAndFlush(op).addListener(f -> {
            if (requests.remove(id) == null) {
                return; // the endpoint ended first and failed it
            }
            if (f.isSuccess()) {
                r.result().trySuccess(op.result());
                promise.trySuccess();
            } else {
                r.result().tryFailure(f.cause());
                promise.tryFailure(f.cause());
            }
            sendWaiting(ctx); // the lanes share the endpoint's loop: this is it
        });
        return true;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof AmFrame frame)
                || (frame.amId() != AmIds.ATOMIC_REQ && frame.amId() != AmIds.ATOMIC_REP)) {
            ctx.fireChannelRead(msg);
            return;
        }
        try {
            ByteBuf h = frame.header();
            int at = h.readerIndex();
            if (frame.amId() == AmIds.ATOMIC_REQ) {
                expect(frame, AmoHeaders.REQ_LENGTH);
                if (!unanswered.isEmpty() || !ctx.channel().isWritable()) {
                    if (unanswered.size() >= backlog) {
                        throw new LimitExceededException(ReceiveLimits.REPLY_BACKLOG, backlog, "the peer sent "
                                + (unanswered.size() + 1) + " atomics whose answers it does not read");
                    }
                    unanswered.add(frame.retain());
                    return;
                }
                answer(ctx, frame);
                answeredInBatch = true;
            } else {
                expect(frame, AmoHeaders.REP_LENGTH);
                onReply(h.getLongLE(at), h.getUnsignedByte(at + 8), h.getLongLE(at + 9));
                sendWaiting(ctx);
            }
        } finally {
            frame.release();
        }
    }

    private void answer(ChannelHandlerContext ctx, AmFrame frame) {
        ByteBuf h = frame.header();
        int at = h.readerIndex();
        ByteBuf reply = apply(ctx, h.getLongLE(at), h.getLongLE(at + 8), h.getLongLE(at + 16), h.getLongLE(at + 24),
                h.getIntLE(at + 32), h.getUnsignedByte(at + 36), h.getLongLE(at + 40));
        ctx.write(AmFrame.of(AmIds.ATOMIC_REP, reply), ProtocolCodec.quietPromise(ctx));
    }

    /** Our atomics that waited for the window, as answers free it. */
    private void sendWaiting(ChannelHandlerContext ctx) {
        boolean sent = false;
        while (!waitingToSend.isEmpty() && requests.size() < backlog) {
            Object[] w = waitingToSend.poll();
            send(ctx, (AtomicRequest) w[0], (ChannelPromise) w[1]);
            sent = true;
        }
        if (sent) {
            ctx.flush();
        }
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        answerWaiting(ctx);
        if (answeredInBatch) {
            answeredInBatch = false;
            ctx.flush(); // the answers of this read batch, in one go; none, no flush (a pass over every lane)
        }
        ctx.fireChannelReadComplete();
    }

    @Override
    public boolean readCompletePending() {
        return answeredInBatch || !unanswered.isEmpty();
    }

    /** The lane takes more again: answer what waited, while it does. */
    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        answerWaiting(ctx);
        ctx.fireChannelWritabilityChanged();
    }

    private void answerWaiting(ChannelHandlerContext ctx) {
        boolean answered = false;
        while (!unanswered.isEmpty() && ctx.channel().isWritable()) {
            AmFrame f = unanswered.poll();
            try {
                answer(ctx, f);
                answered = true;
            } finally {
                f.release();
            }
        }
        if (answered) {
            ctx.flush();
        }
    }

    /** Applies one ATOMIC_REQ; returns the ATOMIC_REP header. */
    private ByteBuf apply(ChannelHandlerContext ctx, long id, long address, long value, long compare, int region,
                          int opCode, long secret) {
        AtomicOp op = AtomicOp.fromWire(opCode);
        long old = 0;
        int status = check(op, region, secret, address);
        if (status == AmoHeaders.STATUS_OK) {
            MemorySegment seg = memory.region(region, secret);
            try {
                old = apply(op, seg, address - seg.address(), value, compare);
            } catch (IllegalStateException | WrongThreadException inaccessible) {
                // its arena was closed without unregistering, or confines it to another thread
                status = AmoHeaders.STATUS_INACCESSIBLE;
            }
        }
        return ctx.alloc().buffer(AmoHeaders.REP_LENGTH).writeLongLE(id).writeByte(status).writeLongLE(old);
    }

    private int check(AtomicOp op, int region, long secret, long address) {
        if (op == null) {
            return AmoHeaders.STATUS_UNKNOWN_OP;
        }
        MemorySegment seg = memory.region(region, secret);
        if (seg == null) {
            return AmoHeaders.STATUS_NO_REGION;
        }
        if (address % 8 != 0) {
            return AmoHeaders.STATUS_MISALIGNED;
        }
        long offset = address - seg.address();
        return offset < 0 || offset > seg.byteSize() - 8 ? AmoHeaders.STATUS_OUT_OF_BOUNDS : AmoHeaders.STATUS_OK;
    }

    static long apply(AtomicOp op, MemorySegment seg, long offset, long value, long compare) {
        return switch (op) {
            case ADD -> (long) WORD.getAndAdd(seg, offset, value);
            case SWAP -> (long) WORD.getAndSet(seg, offset, value);
            case CSWAP -> (long) WORD.compareAndExchange(seg, offset, compare, value);
            case AND -> (long) WORD.getAndBitwiseAnd(seg, offset, value);
            case OR -> (long) WORD.getAndBitwiseOr(seg, offset, value);
            case XOR -> (long) WORD.getAndBitwiseXor(seg, offset, value);
        };
    }

    private void onReply(long id, int status, long value) {
        AtomicRequest r = requests.remove(id);
        if (r == null) {
            throw new ProtocolException("ATOMIC_REP for unknown request " + id);
        }
        if (status == AmoHeaders.STATUS_OK) {
            r.result().trySuccess(value);
        } else {
            r.result().tryFailure(new RemoteAccessException(r.op() + " at " + Long.toHexString(r.address())
                    + " of region " + r.key().region() + " (" + Long.toHexString(r.key().base()) + ", "
                    + r.key().length() + " bytes) refused by the peer: " + AmoHeaders.statusText(status)));
        }
    }

    private static void expect(AmFrame frame, int length) {
        int n = frame.header().readableBytes();
        if (n != length || frame.payload().readableBytes() != 0) {
            throw new ProtocolException(AmIds.name(frame.amId()) + " header is " + n + " bytes with "
                    + frame.payload().readableBytes() + " payload bytes, expected " + length + " and none");
        }
    }

    @Override
    public void collectOutstanding(List<Future<?>> out) {
        requests.values().forEach(r -> out.add(r.result()));
        if (early != null) {
            early.forEach(w -> out.add(((AtomicRequest) w[0]).result()));
        }
        waitingToSend.forEach(w -> out.add(((AtomicRequest) w[0]).result()));
    }

    /** The endpoint ended: waiting atomics fail (whether the peer applied them is unknown). */
    @Override
    public void endpointEnded(Throwable cause) {
        if (early != null) {
            for (Object[] w; (w = early.poll()) != null; ) {
                ((AtomicRequest) w[0]).result().tryFailure(cause);
                ((ChannelPromise) w[1]).tryFailure(cause);
            }
            early = null;
        }
        requests.takeAll().forEach(r -> r.result().tryFailure(cause));
        for (Object[] w; (w = waitingToSend.poll()) != null; ) {
            ((AtomicRequest) w[0]).result().tryFailure(cause);
            ((ChannelPromise) w[1]).tryFailure(cause);
        }
        for (AmFrame f; (f = unanswered.poll()) != null; ) {
            f.release();
        }
    }

    /** The peer's atomics waiting for the lane to take their answers; for tests. */
    public int unansweredCount() {
        return unanswered.size();
    }

    @Override
    public void describeRequests(List<String> out) {
        out.add("amo: " + requests.size() + " atomics waiting");
    }
}
