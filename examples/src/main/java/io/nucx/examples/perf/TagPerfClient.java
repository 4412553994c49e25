package io.nucx.examples.perf;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.GenericFutureListener;
import io.netty.util.concurrent.Promise;
import io.nucx.AmMessage;
import io.nucx.Endpoint;
import io.nucx.EndpointOption;
import io.nucx.Worker;
import io.nucx.protocol.am.AmData;
import io.nucx.protocol.amo.RemoteMemoryKey;
import io.nucx.protocol.stream.StreamData;
import io.nucx.protocol.tag.TagMessage;
import io.nucx.protocol.tag.TagReceive;
import org.HdrHistogram.Histogram;

import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.time.Instant;
import java.util.concurrent.TimeUnit;

/**
 * The measuring side of a tag or RMA test, run entirely on the worker's event loop: each completion starts the next
 * step, so no thread hand-off sits inside the measured loop.
 * <ul>
 *   <li>tag_lat: post a receive for PONG, send PING; one iteration per round trip.</li>
 *   <li>tag_bw: keep {@code window} DATA sends outstanding; a send whose write returns done (a short send copied
 *       into the transport) counts at once, with no listener, as ucx_perftest counts a send its call completed. The
 *       run ends when the server acknowledges a SYNC sent after the last DATA, so the time counts delivery, not just
 *       local completion.</li>
 *   <li>ucp_put_bw, ucp_get: keep {@code window} puts (or gets) of the server's registered memory outstanding (the
 *       RMA API; a put completes when its bytes are at the server); the run ends with a flush.</li>
 * </ul>
 * Warm-up runs the same loop first (at most {@code warmup} iterations or {@code warmupNanos}, 100 ms by default).
 *
 * <p>It calls nucx the way that allocates nothing per message where the test allows: the payload is one pooled buffer,
 * sent by {@link Endpoint#trySendShort} while it goes eager short (copied at once, the buffer still ours, as
 * ucx_perftest sends one buffer) and otherwise as retained duplicates (recycled objects) under the endpoint's
 * {@link EndpointOption#SEND_TAG}, and tag_lat's
 * PONG comes to a {@linkplain TagReceive#reusable reusable} receive. The synchronous tests send {@code TagMessage}s
 * (the flag travels in the message), and tag_bw's sends take a promise each (a listener only when not done on return)
 * unless they go short: in tag_bw, am_bw and stream_bw a size that went short waits for the endpoint's writability
 * when the lane is full, as a Netty app that heeds it does, where it wrote a promise the lane completed later.
 * am_lat and am_bw send the same as active messages ({@code AmData}, no user header) to the server's handlers; the
 * PONG comes to this worker's handler (rendezvous ones received into a pooled buffer). stream_lat and stream_bw write
 * to the endpoint's byte stream ({@code StreamData}, a duplicate each), as a Netty app's writes over nucx go, and the
 * PONG's bytes come up this worker's endpoints' pipelines ({@link PerfStreamReader}).
 */
final class TagPerfClient {

    /**
     * WARMUP, then SETTLE: the phase boundary's own messages (SYNC, its ack, MEASURE: empty messages the warm-up's
     * sizes never took) make the JIT compiler throw away code compiled for the warm-up's branches alone and compile it
     * again; and compilations the warm-up set off are still running when it ends (a C2 compilation of the server's
     * reply handler ran 250 ms and more, on a 2-core machine where both loops busy-poll). SETTLE runs the test on, in
     * chunks of {@link #SETTLE_CHUNK_NANOS}, each ending with a SYNC whose ack carries the server's
     * {@link JitActivity#compilerNanos}, until the two compilers together have run for at most 1 % of the last
     * {@link #SETTLE_QUIET_NANOS} (or {@link PerfParams#settleNanos} is up); so the compiling (on the CPUs the loops
     * need) happens before the measured run, not in it, and the boundary comes again with nothing new in it.
     */
    private enum Phase { WARMUP, SETTLE, MEASURE, DONE }

    /** SETTLE ends once neither side's JIT compiler has run more than {@link #SETTLE_QUIET_SHARE} of this long. */
    static final long SETTLE_QUIET_NANOS = 200_000_000L;
    /** ...that is, 2 ms of compiling in 200 ms, a compilation or two of a small method. */
    static final double SETTLE_QUIET_SHARE = 0.01;
    /**
     * A SETTLE chunk's length: the SYNC and the readings between chunks are code too, and run often they would be
     * compiled in turn.
     */
    private static final long SETTLE_CHUNK_NANOS = 25_000_000L;

    private final Worker worker;
    private final Endpoint ep;
    private final PerfParams params;
    private final PerfReporter reporter;
    private final Promise<PerfResult> result;
    /** Sent again and again as retained duplicates; released when the run ends. */
    private final ByteBuf payload;
    /** Every measured iteration; the Final row's percentile is the part recorded since the last progress row. */
    private final Histogram overall = new Histogram(3_600_000_000_000L, 3);
    /** {@link #overall} as it was at the last progress row (copied once a second, not per message). */
    private Histogram atLastReport = new Histogram(3_600_000_000_000L, 3);
    /** A progress row's percentile: the last iterations', as ucx_perftest's rows (null without progress rows). */
    private final RecentIterations recent;
    private final boolean sync;
    private final boolean am;
    /** stream_lat / stream_bw: PINGs and DATA go as stream writes, PONGs come through this reader. */
    private final PerfStreamReader stream;
    /** Null unless the run sends fresh data ({@link PerfParams#freshData}). */
    private final FreshData fresh;
    private final int windowIterations;
    private final long processStartMillis = ProcessHandle.current().info().startInstant()
            .map(Instant::toEpochMilli).orElse(System.currentTimeMillis());

    private Phase phase = Phase.WARMUP;
    private long phaseStart;
    private long iter;
    private long target;
    private long lastStamp;
    /** The clock's last reading by {@link #record}, in any phase. */
    private long lastClock;
    private long lastReport;
    private long lastReportIter;
    // bandwidth state
    private long sent;
    private int outstanding;
    /** This phase's sends are all done and its end (SYNC or RMA flush) is under way. */
    private boolean sendsFinished;
    /** A send of this run went short ({@code trySendShort} and kin): a refusal then with no room is a full lane. */
    private boolean wentShort;
    /** Sends wait for the endpoint to become writable again ({@link #onWritable}). */
    private boolean waitingForRoom;
    /** A {@link #sendMore} is queued on the loop already (one at a time). */
    private boolean sendScheduled;
    /** Inside {@link #sendMore}: sends its flush completes must not queue the next batch into this turn's tasks. */
    private boolean inSendMore;
    private final Runnable scheduledSend = () -> {
        sendScheduled = false;
        sendMore();
    };
    // window reports (warm-up included)
    private long runIterations;
    private long windowStart;
    private long allocStart;
    private double allocPerIteration;
    // steady warm-up (PerfParams.steadyWindow)
    private long steadyStart;
    private long steadyCount;
    private double steadyBest = Double.MAX_VALUE;
    private int calmWindows;
    private boolean steady;
    private long jitMillis = -1;
    private long jitChanged;
    /** When the phase ends whatever its iterations ({@link #timeUp}). */
    private long deadline;
    /** A deadline no run reaches (and {@code now - deadline} cannot overflow). */
    private static final long NO_DEADLINE = 1L << 62;
    // SETTLE as a whole (its chunks each begin the phase again)
    private long settleStart;
    /** Judges both sides' {@link JitActivity#compilerNanos} readings at each SETTLE chunk's end. */
    private final QuietCompilers quietCompilers = new QuietCompilers(SETTLE_QUIET_NANOS, SETTLE_QUIET_SHARE);
    /** The server's reading in the last SYNC_ACK that carried one (0 for an RMA test: no handler to compile there). */
    private long serverCompilerAcked;
    /** The window reports' names of the phases ({@link Phase#ordinal}): none made per window. */
    private static final String[] PHASE_LABELS = {"warmup", "settle", PerfReporter.MEASURE_PHASE, "done"};

    private final GenericFutureListener<Future<TagMessage>> onSyncPong = this::onSyncPong;
    private final GenericFutureListener<Future<Void>> onSent = this::onSent;
    /**
     * Sends completed on return counted in one go before the loop gets a turn: at most this many, and at most
     * {@link #INLINE_BYTES} of them (1,024 sends of 1 MiB that a fast reader keeps taking are a gigabyte copied
     * before the loop reads anything).
     */
    private static final int INLINE_BATCH = 1024;
    private static final long INLINE_BYTES = 4L << 20;
    /** Inline sends of this batch counted but not yet clocked ({@link #record}ed once at the batch's end). */
    private int unclocked;
    /** The PONGs' receive buffer, as ucx_perftest's. */
    private final ByteBuf pongBuffer;
    private final TagReceive pong;
    /** RMA tests: the server's memory and ours, the same size. */
    private final RemoteMemoryKey key;
    private final MemorySegment local;

    TagPerfClient(Worker worker, Endpoint ep, PerfParams params, PerfReporter reporter) {
        this(worker, ep, params, reporter, null);
    }

    /** @param key the server's registered memory, for an RMA test; null for a tag test */
    TagPerfClient(Worker worker, Endpoint ep, PerfParams params, PerfReporter reporter,
                  RemoteMemoryKey key) {
        this(worker, ep, params, reporter, key, null);
    }

    /**
     * @param stream stream_lat / stream_bw: the reader in this worker's endpoints' pipelines, where the PONGs come;
     *               null for the other tests
     */
    TagPerfClient(Worker worker, Endpoint ep, PerfParams params, PerfReporter reporter,
                  RemoteMemoryKey key, PerfStreamReader stream) {
        this.stream = stream;
        this.key = key;
        this.worker = worker;
        this.ep = ep;
        this.params = params;
        this.reporter = reporter;
        this.recent = reporter.wantsProgress() ? new RecentIterations() : null;
        this.sync = params.test().sync();
        this.am = params.test().am();
        this.fresh = params.freshData() ? new FreshData() : null;
        this.windowIterations = reporter.windowIterations();
        this.result = worker.eventLoop().newPromise();
        int size = params.messageSize();
        ByteBuf contig = PooledByteBufAllocator.DEFAULT.directBuffer(size, size);
        for (int i = 0; i < size; i++) {
            contig.writeByte(i);
        }
        ByteBuf send = contig;
        if (params.iov() && size > 1) { // two parts: the selection key says IOV
            int half = size / 2;
            send = Unpooled.wrappedBuffer(contig.retainedSlice(0, half), contig.retainedSlice(half, size - half));
            contig.release(); // the composite's parts keep the memory
        }
        this.payload = send;
        this.pongBuffer = PooledByteBufAllocator.DEFAULT.directBuffer(size, size);
        this.pong = PerfTags.discarding(PerfTags.PONG, pongBuffer, this::onPong, this::fail);
        ep.config().setOption(EndpointOption.SEND_TAG, params.test().pingPong() ? PerfTags.PING : PerfTags.DATA);
        this.local = key == null ? null : MemorySegment.ofBuffer(contig.nioBuffer(0, size));
    }

    Future<PerfResult> start() {
        if (stream != null) {
            stream.onMessage(this::onPong);
        }
        if (am) {
            worker.setAmHandler(PerfTags.AM_PONG, this::onAmPong);
            result.addListener(f -> worker.setAmHandler(PerfTags.AM_PONG, null));
        }
        if (!params.test().pingPong() && !sync && key == null) {
            // Only where sends may wait for room: a handler of the user's at the pipeline's end costs every read
            // batch a walk of the endpoint's pipeline (EndpointChannel.readBatchEnded), which a ping-pong would pay.
            ChannelHandler roomWatch = new ChannelInboundHandlerAdapter() {
                @Override
                public void channelWritabilityChanged(ChannelHandlerContext ctx) {
                    onWritable();
                    ctx.fireChannelWritabilityChanged();
                }
            };
            ep.pipeline().addLast(roomWatch);
            result.addListener(f -> ep.eventLoop().execute(() -> {
                if (ep.pipeline().context(roomWatch) != null) {
                    ep.pipeline().remove(roomWatch);
                }
            }));
        }
        worker.eventLoop().execute(() -> beginPhase(Phase.WARMUP));
        // A server that dies mid-run leaves a receive posted for ever: end with the endpoint's failure instead.
        ep.errorFuture().addListener(f -> {
            if (!f.isSuccess()) {
                result.tryFailure(f.cause());
            }
        });
        result.addListener(f -> { // sends still in flight hold their own duplicates, a receive still going a slice
            payload.release();
            pongBuffer.release();
        });
        return result;
    }

    /** Bytes the loop thread allocated per iteration of the measured run (valid once the result is in). */
    double allocationPerIteration() {
        return allocPerIteration;
    }

    private void beginPhase(Phase p) {
        if (p == Phase.MEASURE || p == Phase.SETTLE) {
            // The server counts from here: this arrives before the first measured message (one lane keeps order).
            ep.writeAndFlush(new TagMessage(PerfTags.MEASURE, Unpooled.EMPTY_BUFFER), ep.voidPromise());
        }
        phase = p;
        iter = 0;
        phaseStart = System.nanoTime();
        lastStamp = phaseStart;
        lastClock = phaseStart;
        lastReport = phaseStart;
        lastReportIter = 0;
        switch (p) {
            case WARMUP -> {
                target = params.warmup();
                deadline = phaseStart + params.warmupNanos();
            }
            case SETTLE -> { // chunks of a time; without settling, one chunk as long as the warm-up
                target = params.settleNanos() > 0 ? Long.MAX_VALUE : params.warmup();
                deadline = phaseStart + (params.settleNanos() > 0 ? SETTLE_CHUNK_NANOS : params.warmupNanos());
            }
            default -> {
                target = params.iterations();
                deadline = phaseStart + NO_DEADLINE;
            }
        }
        sent = 0;
        outstanding = 0;
        sendsFinished = false;
        waitingForRoom = false;
        atLastReport.reset();
        overall.reset(); // the tail describes the measured run only
        if (recent != null) {
            recent.clear();
        }
        if (p == Phase.WARMUP) {
            windowStart = phaseStart;
            steadyStart = phaseStart;
        }
        allocStart = PerfAllocation.current();
        if (target == 0) {
            endPhase();
            return;
        }
        if (params.test().pingPong()) {
            ping();
        } else {
            sendMore();
        }
    }

    /**
     * The phase's time is up. One comparison whatever the phase, so the code the JIT compiler makes of it while SETTLE
     * runs (a test on the phase, taken one way only) is not thrown away at the measured run's first message.
     */
    private boolean timeUp(long now) {
        return now - deadline >= 0;
    }

    /** Reads the JIT compiler's total time (a JMX call); {@link #jitChanged} is when it last grew. */
    private void lookAtJit(long now) {
        long jit = ManagementFactory.getCompilationMXBean().getTotalCompilationTime();
        if (jit != jitMillis) {
            jitMillis = jit;
            jitChanged = now;
        }
    }

    /** Steady warm-up: one more iteration; at each window's end, whether the run is steady yet. */
    private void steadyCheck(long now, int iterations) {
        steadyCount += iterations;
        if (steadyCount < params.steadyWindow()) {
            return;
        }
        double avg = (now - steadyStart) / (double) steadyCount;
        steadyStart = now;
        steadyCount = 0;
        steadyBest = Math.min(steadyBest, avg);
        calmWindows = avg <= steadyBest * 1.1 ? calmWindows + 1 : 0;
        lookAtJit(now);
        steady = calmWindows >= 3 && now - jitChanged >= PerfParams.QUIET_JIT_NANOS;
        if (steady) {
            deadline = now; // the warm-up ends at the next iteration
        }
    }

    // ---------------------------------------------------------------- tag_lat

    private void ping() {
        if (fresh != null) {
            fresh.write(payload, payload.readerIndex(), payload.readableBytes());
        }
        if (stream != null) {
            if (ep.trySendStreamShort(payload)) {
                ep.flush(); // copied into the transport, the payload still ours, as ucx_perftest's ucp_stream_send_nbx
            } else {
                ep.writeAndFlush(new StreamData(payload.retainedDuplicate()), ep.voidPromise());
            }
        } else if (am) {
            if (ep.tryAmSendShort(PerfTags.AM_PING, Unpooled.EMPTY_BUFFER, payload, false)) {
                ep.flush(); // copied into the transport, the payload still ours, as ucx_perftest's ucp_am_send_nbx
            } else {
                ep.writeAndFlush(new AmData(PerfTags.AM_PING, Unpooled.EMPTY_BUFFER, payload.retainedDuplicate(),
                        false), ep.voidPromise());
            }
        } else if (sync) {
            worker.tagRecv(PerfTags.PONG, -1L).addListener(onSyncPong);
            ep.writeAndFlush(new TagMessage(PerfTags.PING, payload.retainedDuplicate(), true), ep.voidPromise());
        } else if (ep.trySendShort(PerfTags.PING, payload)) {
            ep.flush(); // copied into the transport, the payload still ours: one buffer, as ucx_perftest sends
            // Posted after the send, as ucx_perftest posts it: the PONG can only be read once this returns to the
            // loop, so the receive is there in time, and posting it is not on the way of the PING.
            worker.tagRecv(pong);
        } else {
            worker.tagRecv(pong);
            ep.writeAndFlush(payload.retainedDuplicate(), ep.voidPromise());
        }
    }

    /** am_lat's PONG: eager, or received into a pooled buffer first. */
    private void onAmPong(AmMessage m) {
        if (!m.isRendezvous()) {
            onPong();
            return;
        }
        int size = (int) m.dataLength();
        ByteBuf into = PooledByteBufAllocator.DEFAULT.directBuffer(size, size);
        m.receiveData(into).addListener(f -> {
            into.release();
            if (f.isSuccess()) {
                onPong();
            } else {
                fail(f.cause());
            }
        });
    }

    private void onSyncPong(Future<TagMessage> f) {
        if (!f.isSuccess()) {
            fail(f.cause());
            return;
        }
        f.getNow().release();
        onPong();
    }

    /**
     * One round trip done. The clock is read after the next PING has gone, not before: System.nanoTime costs 22 ns
     * here, and there it would delay every PING. Each iteration still gets one reading, and the phase's total is the
     * same (from before the first PING to after the last PONG); the warm-up's time limit looks at the last reading.
     */
    private void onPong() {
        if (++iter >= target || timeUp(lastClock)) {
            record(System.nanoTime(), 1);
            endPhase();
        } else {
            ping();
            record(System.nanoTime(), 1);
        }
    }

    // ---------------------------------------------------------------- tag_bw

    private void sendMore() {
        inSendMore = true;
        try {
            sendBatch();
        } finally {
            inSendMore = false;
        }
    }

    private void sendBatch() {
        boolean wrote = false;
        int inline = 0;
        int batch = (int) Math.max(1, Math.min(INLINE_BATCH, INLINE_BYTES / Math.max(1, params.messageSize())));
        while (outstanding < params.window() && sent < target) {
            outstanding++;
            sent++;
            if (key != null) {
                (params.test() == PerfTestType.UCP_GET ? ep.get(local, key, key.base())
                        : ep.put(local, key, key.base())).addListener(onSent);
                continue;
            }
            if (fresh != null) {
                fresh.write(payload, payload.readerIndex(), payload.readableBytes());
            }
            if (!sync && (stream != null ? ep.trySendStreamShort(payload)
                    : am ? ep.tryAmSendShort(PerfTags.AM_DATA, Unpooled.EMPTY_BUFFER, payload, false)
                    : ep.trySendShort(PerfTags.DATA, payload))) {
                // Copied into the transport at once and the payload still ours, as ucx_perftest sends one buffer: no
                // duplicate, no reference count touched, no future. Counted with one clock reading per batch, below:
                // System.nanoTime costs 22 ns here, a third of such a send (ucx_perftest reads the TSC, 8 ns).
                wrote = true;
                wentShort = true;
                outstanding--;
                iter++;
                unclocked++;
                if (iter >= target) {
                    break;
                }
                if (++inline == batch) {
                    continueNextTurn();
                    break;
                }
                continue;
            }
            if (wentShort && !ep.isWritable()) { // (a sync run never goes short: its flag travels in the message)
                // A size that goes short met a full lane: wait for room, as a Netty app that heeds writability does
                // (and as UCX puts a send its transport refused on a pending queue, in a request from a pool),
                // rather than write it with a promise the lane completes later (a promise and a lane write each).
                outstanding--;
                sent--;
                waitingForRoom = true;
                break;
            }
            Object msg = stream != null ? new StreamData(payload.retainedDuplicate())
                    : am ? new AmData(PerfTags.AM_DATA, Unpooled.EMPTY_BUFFER, payload.retainedDuplicate(), false)
                    : sync ? new TagMessage(PerfTags.DATA, payload.retainedDuplicate(), true)
                    : payload.retainedDuplicate();
            Future<Void> f = ep.write(msg);
            wrote = true;
            if (!f.isDone()) {
                f.addListener(onSent);
                continue;
            }
            // Done on return (a short send copied into the transport): counted here, with no listener, as
            // ucx_perftest counts a send whose call completed it, and clocked with the batch, as the sends above.
            if (!f.isSuccess()) {
                fail(f.cause());
                break;
            }
            outstanding--;
            iter++;
            unclocked++;
            if (iter >= target) {
                break;
            }
            if (++inline == batch) {
                // Let the loop poll between batches: a peer that keeps up would otherwise keep this call going.
                continueNextTurn();
                break;
            }
        }
        if (unclocked > 0) {
            long now = System.nanoTime();
            record(now, unclocked);
            unclocked = 0;
            if (timeUp(now)) {
                target = sent; // stop issuing; finish what is in flight
            }
        }
        if (wrote) {
            ep.flush();
        }
        if (iter >= target && outstanding == 0) {
            finishSends();
        }
    }

    private void onSent(Future<Void> f) {
        if (!sentOne(f)) {
            return;
        }
        if (iter >= target) {
            if (outstanding == 0) {
                finishSends();
            }
        } else {
            // Not from here: this runs inside the transport's write loop, where a new send can only queue behind the
            // ones it is completing (promise, listener, outbound-buffer entry each); from the loop's next task the
            // buffer is empty and sends go straight into the transport again. ucx_perftest, too, sends from its
            // loop and only counts in completion callbacks. Completed by this task's own flush, the next batch waits
            // for the loop's I/O (continueNextTurn), as one whose sends completed inline does.
            if (inSendMore) {
                continueNextTurn();
            } else {
                scheduleSend();
            }
        }
    }

    /** The endpoint's writability changed: sends that waited for room go on. */
    private void onWritable() {
        if (waitingForRoom && ep.isWritable()) {
            waitingForRoom = false;
            scheduleSend();
        }
    }

    private void scheduleSend() {
        if (!sendScheduled) {
            sendScheduled = true;
            ep.eventLoop().execute(scheduledSend);
        }
    }

    /**
     * The next batch after the loop's I/O: a timer due at once, which Netty takes when a turn's tasks begin. A queued
     * task would run in this turn's task batch, and batch after batch, each queuing the next, kept the loop from its
     * I/O for up to a second plus 64 batches (Netty's task quantum is checked every 64 tasks): with 1 MiB sends that
     * was seconds, and the peer's keepalive probes lay unread until this side's endpoint timed out
     * (NUCX_KEEPALIVE_TIMEOUT; the demo failed so once in about ten runs with a 2 s timeout).
     */
    private void continueNextTurn() {
        if (!sendScheduled) {
            sendScheduled = true;
            ep.eventLoop().schedule(scheduledSend, 0, TimeUnit.NANOSECONDS);
        }
    }

    /** One send completed ({@code f}): counted; false if it failed (the run fails). */
    private boolean sentOne(Future<Void> f) {
        if (!f.isSuccess()) {
            fail(f.cause());
            return false;
        }
        counted();
        return true;
    }

    /** One send completed successfully. */
    private void counted() {
        outstanding--;
        long now = System.nanoTime();
        record(now, 1);
        iter++;
        if (timeUp(now)) {
            target = sent; // stop issuing; finish what is in flight
        }
    }

    /** Every send of the phase completed: the phase ends once the server has them all (or the RMA is flushed). */
    private void finishSends() {
        if (sendsFinished || phase == Phase.DONE) {
            return; // a batch scheduled before the last completion came in: the phase is ending already
        }
        sendsFinished = true;
        if (key != null) {
            ep.flushRma().addListener(flushed -> {
                if (flushed.isSuccess()) {
                    endPhase();
                } else {
                    fail(flushed.cause());
                }
            });
            return;
        }
        worker.tagRecv(PerfTags.SYNC_ACK, -1L).addListener((Future<TagMessage> ack) -> {
            if (ack.isSuccess()) {
                TagMessage m = ack.getNow();
                if (m.content().readableBytes() >= Long.BYTES) {
                    serverCompilerAcked = m.content().getLong(m.content().readerIndex());
                }
                m.release();
                endPhase();
            } else {
                fail(ack.cause());
            }
        });
        // A settling chunk asks for the server's compiler reading (a byte); the measured run's end does not, so the
        // server reads no /proc inside the measured time.
        boolean ask = phase == Phase.SETTLE && params.settleNanos() > 0;
        ep.writeAndFlush(new TagMessage(PerfTags.SYNC, ask ? Unpooled.wrappedBuffer(JIT_READING_PLEASE)
                : Unpooled.EMPTY_BUFFER), ep.voidPromise());
    }

    /** The SYNC payload that asks for the server's {@link JitActivity#compilerNanos} in the ack. */
    private static final byte[] JIT_READING_PLEASE = {1};

    // ---------------------------------------------------------------- accounting

    private void record(long now, int iterations) {
        lastClock = now;
        runIterations += iterations;
        if (phase == Phase.WARMUP && params.steadyWindow() > 0) {
            steadyCheck(now, iterations);
        }
        if (windowIterations > 0
                && runIterations / windowIterations != (runIterations - iterations) / windowIterations) {
            double perIteration = (now - windowStart) / 1000.0 / windowIterations
                    / (params.test().pingPong() ? 2.0 : 1.0);
            windowStart = now;
            reporter.window(PHASE_LABELS[phase.ordinal()], runIterations,
                    System.currentTimeMillis() - processStartMillis, perIteration);
        }
        if (phase == Phase.WARMUP) {
            return;
        }
        // SETTLE records as MEASURE does (each phase begins with the histogram reset), so the measured run's first
        // recording is not code the JIT compiler has yet to compile.
        long dt = now - lastStamp;
        lastStamp = now;
        // A batch's iterations share its time evenly (one clock reading per batch of inline sends).
        overall.recordValueWithCount(Math.max(dt / iterations, 1), iterations);
        if (recent != null) {
            recent.add(dt, iterations);
        }
        // The same test in both phases (only what it leads to differs): a test on the phase first would be one the
        // JIT compiler saw go one way all through SETTLE, and the measured run's first message would recompile it.
        if (reporter.wantsProgress() && now - lastReport >= 1_000_000_000L && phase == Phase.MEASURE) {
            reporter.progress(PerfResult.of(params.test().pingPong(), params.messageSize(), iter + 1,
                    iter + 1 - lastReportIter, now - lastReport, now - phaseStart,
                    recent.percentile(params.percentile())));
            atLastReport = overall.copy();
            lastReport = now;
            lastReportIter = iter + 1;
        }
    }

    private void endPhase() {
        long now = System.nanoTime();
        if (phase == Phase.WARMUP) {
            reporter.warmupDone(params, iter, now - phaseStart, steady);
            // No warm-up, no settling: a cold run measures the first messages, boundary and all
            settleStart = now;
            beginPhase(iter == 0 ? Phase.MEASURE : Phase.SETTLE);
            return;
        }
        if (phase == Phase.SETTLE) {
            if (key == null && !sendsFinished) {
                finishSends(); // a ping-pong chunk: the server's reading first (SYNC, its ack), then here again
                return;
            }
            if (params.settleNanos() > 0) {
                boolean quiet = quietCompilers.quiet(now, JitActivity.compilerNanos(), serverCompilerAcked);
                if (!quiet && now - settleStart < params.settleNanos()) {
                    beginPhase(Phase.SETTLE); // another chunk
                    return;
                }
                reporter.settled(now - settleStart, quiet);
            }
            beginPhase(Phase.MEASURE);
            return;
        }
        allocPerIteration = iter == 0 ? 0 : (PerfAllocation.current() - allocStart) / (double) iter;
        phase = Phase.DONE;
        Histogram since = sinceLastReport();
        Histogram h = since.getTotalCount() > 0 ? since : overall;
        result.trySuccess(PerfResult.of(params.test().pingPong(), params.messageSize(), iter, iter - lastReportIter,
                now - lastReport, now - phaseStart, h.getValueAtPercentile(params.percentile()), overall));
    }

    /** What {@link #overall} recorded since the last progress row. */
    private Histogram sinceLastReport() {
        Histogram since = overall.copy();
        since.subtract(atLastReport);
        return since;
    }

    private void fail(Throwable cause) {
        phase = Phase.DONE;
        result.tryFailure(cause);
    }
}
