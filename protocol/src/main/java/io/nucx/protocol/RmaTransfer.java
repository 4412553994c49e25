package io.nucx.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.GenericFutureListener;
import io.nucx.transport.Buffers;
import io.nucx.transport.rma.RemoteKey;
import io.nucx.transport.rma.RmaException;
import io.nucx.transport.rma.RmaLane;
import io.nucx.transport.rma.RmaOp;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * One transfer moved by RMA through an endpoint's RMA lanes (each moves a few segments per event-loop turn, so other
 * endpoints are served in between): a GET of the peer's memory into a local buffer, or a PUT of a local buffer into
 * the peer's memory. With several rails (UCX's RMA_BW multi-rail) the bytes are split into one contiguous part per
 * rail, in proportion to the rails' bandwidth ({@link #split}), and the parts move at once; the transfer is done when
 * every part is. Each part moves as one operation when its local bytes are one run of native memory, otherwise chunk
 * by chunk ({@link #BOUNCE_CHUNK}), one per loop turn, through a pooled direct bounce buffer and a copy. The subclass
 * says what finishing and failing mean ({@code rndv/get/zcopy}: ATS or RTR; {@code rndv/put/zcopy}: ATP or
 * fragments; the RMA API: the user's future). Loop only.
 */
public abstract class RmaTransfer {

    /** The bounce buffer's size: UCX's RNDV_FRAG_SIZE for host memory. */
    public static final int BOUNCE_CHUNK = 512 * 1024;
    /** Counter prefix ({@link ProtocolCounters}): bytes each rail moved, by rail name ("rma/bytes:rdma/mlx5_0:1"). */
    public static final String RAIL_BYTES_COUNTER = "rma/bytes:";

    /** A rail and the peer's key as that rail unpacked it. */
    public record RailKey(RmaRail rail, RemoteKey key) {
    }

    private final boolean put;
    private final ByteBuf local;
    private final EventExecutor executor;
    private final ProtocolCounters counters;
    private final List<Part> parts = new ArrayList<>(1);
    /** Bytes {@code [start, start + total)} of {@code local}. */
    protected final long total;
    private int partsLeft;
    private boolean over;

    /**
     * @param put          true to write {@code local} into the peer's memory, false to read the peer's memory into it
     * @param rails        the rails to use with the peer's key for each, best first; the transfer is split over them
     * @param remoteOffset where in the peer's region (each key's) the transfer starts
     * @param alloc        where a bounce buffer comes from when {@code local} is heap (the GC moves it: no address for a
     *                     system call or a device) or scattered
     * @param counters     where each rail's bytes are counted, or null
     */
    protected RmaTransfer(boolean put, List<RailKey> rails, ByteBuf local, int start, long total, long remoteOffset,
                          ByteBufAllocator alloc, EventExecutor executor, ProtocolCounters counters) {
        if (rails.isEmpty()) {
            throw new IllegalArgumentException("an RMA transfer needs a rail");
        }
        this.put = put;
        this.local = local;
        this.total = total;
        this.executor = executor;
        this.counters = counters;
        if (rails.size() == 1) { // the usual case: one part, nothing to split
            parts.add(new Part(rails.get(0), start, remoteOffset, total, alloc));
        } else {
            List<RmaRail> each = new ArrayList<>(rails.size());
            for (RailKey rk : rails) {
                each.add(rk.rail());
            }
            long[] sizes = split(total, each);
            long at = 0;
            for (int i = 0; i < sizes.length; i++) {
                if (sizes[i] > 0 || (total == 0 && i == 0)) {
                    parts.add(new Part(rails.get(i), start + (int) at, remoteOffset + at, sizes[i], alloc));
                    at += sizes[i];
                }
            }
        }
        partsLeft = parts.size();
    }

    /**
     * How many bytes of {@code total} each rail moves: all on the first when there is one rail or too little for each
     * to move {@link EndpointConfig#MIN_RAIL_PART}; otherwise in proportion to bandwidth, the last rail taking what
     * rounding leaves. Both peers compute the same from the same figures.
     */
    public static long[] split(long total, List<RmaRail> rails) {
        long[] out = new long[rails.size()];
        if (rails.size() == 1 || total < EndpointConfig.MIN_RAIL_PART * rails.size()) {
            out[0] = total;
            return out;
        }
        double sum = 0;
        for (RmaRail r : rails) {
            sum += r.bandwidth();
        }
        long given = 0;
        for (int i = 0; i < out.length - 1; i++) {
            out[i] = (long) (total * (rails.get(i).bandwidth() / sum));
            given += out[i];
        }
        out[out.length - 1] = total - given;
        return out;
    }

    /** The whole transfer has been moved (bounce buffers are back). */
    protected abstract void finished();

    /** An operation failed at run time (EPERM, ESRCH, EFAULT, a verbs error; every part stopped, buffers back). */
    protected abstract void failed(Throwable cause);

    /** Starts every part. */
    public final void start() {
        for (int i = 0; i < parts.size() && !over; i++) { // the list is fixed; a part may end the transfer at once
            parts.get(i).next();
        }
    }

    /**
     * Stops every part before its next chunk (we run on the lanes' loop: none is in progress now) and gives the bounce
     * buffers back. Neither {@link #finished} nor {@link #failed} is called after.
     */
    public final void cancel() {
        if (over) {
            return;
        }
        over = true;
        for (Part p : parts) {
            p.stop();
        }
    }

    /** The parts' rails, in order, with their byte counts; for tests and diagnostics. */
    public final List<String> describeParts() {
        return parts.stream().map(p -> p.rk.rail().name() + "=" + p.length).toList();
    }

    private void partDone(Part p) {
        if (counters != null && p.length > 0) {
            counters.railBytes(p.rk.rail().name()).add(p.length);
        }
        if (--partsLeft == 0 && !over) {
            over = true;
            finished();
        }
    }

    private void partFailed(Throwable cause) {
        if (over) {
            return;
        }
        over = true;
        for (Part p : parts) {
            p.stop();
        }
        failed(cause);
    }

    /** One rail's contiguous share: bytes {@code [localStart, +length)} of the local buffer. */
    private final class Part {
        final RailKey rk;
        final int localStart;
        final long remoteOffset;
        final long length;
        final MemorySegment direct;
        /** Made when first needed: most operations are done at once ({@code performNow}), in one chunk. */
        GenericFutureListener<Future<Void>> onDone;
        Runnable nextChunk;
        GenericFutureListener<Future<Object>> nextChunkCancelled;
        ByteBuf bounce;
        MemorySegment bounceSegment;
        RmaOp op;
        long done;
        boolean stopped;

        Part(RailKey rk, int localStart, long remoteOffset, long length, ByteBufAllocator alloc) {
            this.rk = rk;
            this.localStart = localStart;
            this.remoteOffset = remoteOffset;
            this.length = length;
            direct = Buffers.nativeRun(local, localStart, (int) length);
            if (direct == null) {
                int n = (int) Math.min(BOUNCE_CHUNK, length);
                bounce = alloc.directBuffer(Math.max(n, 1), Math.max(n, 1));
                bounceSegment = MemorySegment.ofBuffer(bounce.nioBuffer(0, n));
            }
        }

        void next() {
            if (stopped) {
                return;
            }
            RemoteKey key = rk.key();
            if (direct != null) {
                op = put ? RmaOp.put(key, remoteOffset, direct) : RmaOp.get(key, remoteOffset, direct);
            } else {
                int n = (int) Math.min(BOUNCE_CHUNK, length - done);
                MemorySegment chunk = bounceSegment.asSlice(0, n);
                if (put) {
                    Buffers.copy(local, localStart + (int) done, bounce, 0, n);
                }
                op = put ? RmaOp.put(key, remoteOffset + done, chunk) : RmaOp.get(key, remoteOffset + done, chunk);
            }
            RmaLane lane = rk.rail().lane();
            boolean performed;
            try {
                performed = lane.performNow(op);
            } catch (RmaException e) {
                ended(e);
                return;
            }
            if (performed) {
                ended(null);
            } else {
                if (onDone == null) {
                    onDone = this::onDone;
                }
                lane.channel().writeAndFlush(op).addListener(onDone);
            }
        }

        private void onDone(Future<Void> f) {
            ended(f.isSuccess() ? null : f.cause());
        }

        /** The op ended: failed with {@code cause}, or done (null). */
        private void ended(Throwable cause) {
            if (stopped) {
                return; // whoever stopped it has dealt with the transfer
            }
            if (cause != null) {
                release();
                partFailed(cause);
                return;
            }
            if (direct == null) {
                int n = (int) op.length();
                if (!put) {
                    Buffers.copy(bounce, 0, local, localStart + (int) done, n);
                }
                done += n;
                if (done < length) {
                    if (nextChunk == null) {
                        nextChunk = this::next;
                        nextChunkCancelled = this::nextChunkCancelled;
                    }
                    // One chunk per loop turn, and no recursion through listeners: a scheduled task waits for the
                    // turn's I/O, where one queued with execute would run again before it.
                    executor.schedule(nextChunk, 0, TimeUnit.NANOSECONDS).addListener(nextChunkCancelled);
                    return;
                }
            }
            release();
            partDone(this);
        }

        /**
         * Nothing cancels the next chunk but its loop shutting down (Netty cancels a loop's timers then): the transfer
         * fails, saying so, and gives its buffers back, rather than never ending.
         */
        private void nextChunkCancelled(Future<?> f) {
            if (f.isCancelled()) {
                ended(new RejectedExecutionException(rk.rail().name() + ": the event loop shut down " + done + " of "
                        + length + " bytes into a transfer"));
            }
        }

        void stop() {
            stopped = true;
            if (op != null) {
                op.cancel();
            }
            release();
        }

        private void release() {
            if (bounce != null) {
                bounce.release();
                bounce = null;
                bounceSegment = null;
            }
        }
    }
}
