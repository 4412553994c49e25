package io.nucx.examples.perf;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.GenericFutureListener;
import io.netty.util.concurrent.Promise;
import io.nucx.Endpoint;
import io.nucx.Worker;
import io.nucx.protocol.tag.TagMessage;
import org.HdrHistogram.Histogram;

/**
 * The measuring side of a tag or RMA test, run entirely on the worker's event loop: each completion starts the next
 * step, so no thread hand-off sits inside the measured loop.
 * <ul>
 *   <li>tag_lat: post a receive for PONG, send PING; one iteration per round trip.</li>
 *   <li>tag_bw: keep {@code window} DATA sends outstanding; the run ends when the server acknowledges a SYNC sent
 *       after the last DATA, so the time counts delivery, not just local completion.</li>
 *   <li>ucp_put_bw, ucp_get: keep {@code window} puts (or gets) of the server's registered memory outstanding (the
 *       RMA API; a put completes when its bytes are at the server); the run ends with a flush.</li>
 * </ul>
 * Warm-up runs the same loop first (at most {@code warmup} iterations or {@code warmupNanos}, 100 ms by default).
 */
final class TagPerfClient {

    private enum Phase { WARMUP, MEASURE, DONE }

    private final Worker worker;
    private final Endpoint ep;
    private final PerfParams params;
    private final PerfReporter reporter;
    private final Promise<PerfResult> result;
    /** Sent again and again (as retained duplicates); {@link #owned} is released when the run ends. */
    private final ByteBuf payload;
    private final ByteBuf owned;
    private final Histogram interval = new Histogram(3_600_000_000_000L, 3);
    private final Histogram overall = new Histogram(3_600_000_000_000L, 3);

    private Phase phase = Phase.WARMUP;
    private long phaseStart;
    private long iter;
    private long target;
    private long lastStamp;
    private long lastReport;
    private long lastReportIter;
    // bandwidth state
    private long sent;
    private int outstanding;

    private final GenericFutureListener<Future<TagMessage>> onPong = this::onPong;
    private final GenericFutureListener<Future<Void>> onSent = this::onSent;
    /** RMA tests: the server's memory and ours, the same size. */
    private final io.nucx.protocol.amo.RemoteMemoryKey key;
    private final java.lang.foreign.MemorySegment local;

    TagPerfClient(Worker worker, Endpoint ep, PerfParams params, PerfReporter reporter) {
        this(worker, ep, params, reporter, null);
    }

    /** @param key the server's registered memory, for an RMA test; null for a tag test */
    TagPerfClient(Worker worker, Endpoint ep, PerfParams params, PerfReporter reporter,
                  io.nucx.protocol.amo.RemoteMemoryKey key) {
        this.key = key;
        this.worker = worker;
        this.ep = ep;
        this.params = params;
        this.reporter = reporter;
        this.result = worker.eventLoop().newPromise();
        byte[] bytes = new byte[params.messageSize()];
        for (int i = 0; i < bytes.length; i++) {
            bytes[i] = (byte) i;
        }
        ByteBuf contig = Unpooled.directBuffer(bytes.length).writeBytes(bytes);
        ByteBuf send = contig;
        if (params.iov() && bytes.length > 1) { // two parts: the selection key says IOV
            int half = bytes.length / 2;
            send = Unpooled.wrappedBuffer(contig.retainedSlice(0, half), contig.retainedSlice(half, bytes.length - half));
            contig.release(); // the composite's parts keep the memory
        }
        this.owned = send;
        this.payload = Unpooled.unreleasableBuffer(send);
        this.local = key == null ? null : java.lang.foreign.MemorySegment.ofBuffer(contig.nioBuffer(0,
                bytes.length));
    }

    Future<PerfResult> start() {
        worker.eventLoop().execute(() -> beginPhase(Phase.WARMUP));
        // A server that dies mid-run leaves a receive posted for ever: end with the endpoint's failure instead.
        ep.errorFuture().addListener(f -> {
            if (!f.isSuccess()) {
                result.tryFailure(f.cause());
            }
        });
        result.addListener(f -> owned.release()); // sends still in flight hold their own duplicates
        return result;
    }

    private void beginPhase(Phase p) {
        phase = p;
        iter = 0;
        phaseStart = System.nanoTime();
        lastStamp = phaseStart;
        lastReport = phaseStart;
        lastReportIter = 0;
        target = p == Phase.WARMUP ? params.warmup() : params.iterations();
        sent = 0;
        outstanding = 0;
        interval.reset();
        overall.reset(); // the tail describes the measured run only
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

    private boolean warmupOver(long now) {
        return phase == Phase.WARMUP && now - phaseStart > params.warmupNanos();
    }

    // ---------------------------------------------------------------- tag_lat

    private void ping() {
        worker.tagRecv(PerfTags.PONG, -1L).addListener(onPong);
        ep.writeAndFlush(new TagMessage(PerfTags.PING, payload.retainedDuplicate(), params.test().sync()),
                ep.voidPromise());
    }

    private void onPong(Future<TagMessage> f) {
        if (!f.isSuccess()) {
            fail(f.cause());
            return;
        }
        f.getNow().release();
        long now = System.nanoTime();
        record(now);
        if (++iter >= target || warmupOver(now)) {
            endPhase();
        } else {
            ping();
        }
    }

    // ---------------------------------------------------------------- tag_bw

    private void sendMore() {
        boolean wrote = false;
        while (outstanding < params.window() && sent < target) {
            outstanding++;
            sent++;
            if (key != null) {
                (params.test() == PerfTestType.UCP_GET ? ep.get(local, key, key.base())
                        : ep.put(local, key, key.base())).addListener(onSent);
                continue;
            }
            ep.write(new TagMessage(PerfTags.DATA, payload.retainedDuplicate(), params.test().sync()))
                    .addListener(onSent);
            wrote = true;
        }
        if (wrote) {
            ep.flush();
        }
    }

    private void onSent(Future<Void> f) {
        if (!f.isSuccess()) {
            fail(f.cause());
            return;
        }
        outstanding--;
        long now = System.nanoTime();
        record(now);
        iter++;
        if (warmupOver(now)) {
            target = sent; // stop issuing; finish what is in flight
        }
        if (iter >= target && key != null) {
            ep.flushRma().addListener(flushed -> {
                if (flushed.isSuccess()) {
                    endPhase();
                } else {
                    fail(flushed.cause());
                }
            });
        } else if (iter >= target) {
            worker.tagRecv(PerfTags.SYNC_ACK, -1L).addListener((Future<TagMessage> ack) -> {
                if (ack.isSuccess()) {
                    ack.getNow().release();
                    endPhase();
                } else {
                    fail(ack.cause());
                }
            });
            ep.writeAndFlush(new TagMessage(PerfTags.SYNC, Unpooled.EMPTY_BUFFER), ep.voidPromise());
        } else {
            sendMore();
        }
    }

    // ---------------------------------------------------------------- accounting

    private void record(long now) {
        if (phase != Phase.MEASURE) {
            return;
        }
        long dt = now - lastStamp;
        lastStamp = now;
        interval.recordValue(Math.max(dt, 1));
        overall.recordValue(Math.max(dt, 1));
        if (reporter.wantsProgress() && now - lastReport >= 1_000_000_000L) {
            reporter.progress(PerfResult.of(params.test().pingPong(), params.messageSize(), iter + 1,
                    iter + 1 - lastReportIter, now - lastReport, now - phaseStart,
                    interval.getValueAtPercentile(params.percentile())));
            interval.reset();
            lastReport = now;
            lastReportIter = iter + 1;
        }
    }

    private void endPhase() {
        long now = System.nanoTime();
        if (phase == Phase.WARMUP) {
            beginPhase(Phase.MEASURE);
            return;
        }
        phase = Phase.DONE;
        Histogram h = interval.getTotalCount() > 0 ? interval : overall;
        result.trySuccess(PerfResult.of(params.test().pingPong(), params.messageSize(), iter, iter - lastReportIter,
                now - lastReport, now - phaseStart, h.getValueAtPercentile(params.percentile()), overall));
    }

    private void fail(Throwable cause) {
        phase = Phase.DONE;
        result.tryFailure(cause);
    }
}
