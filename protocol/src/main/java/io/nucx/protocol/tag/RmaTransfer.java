package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.GenericFutureListener;
import io.nucx.transport.rma.RemoteKey;
import io.nucx.transport.rma.RmaLane;
import io.nucx.transport.rma.RmaOp;

import java.lang.foreign.MemorySegment;

/**
 * One rendezvous message moved by RMA through an {@link RmaLane} (which moves one segment per event-loop turn, so other
 * endpoints are served in between): a GET of the peer's memory into a local buffer, or a PUT of a local buffer into
 * the peer's memory. As one operation when the local buffer is one run of native memory, otherwise chunk by chunk
 * ({@link #BOUNCE_CHUNK}), one per loop turn, through a pooled direct bounce buffer and a copy. The subclass says
 * what finishing and failing mean ({@code rndv/get/zcopy}: ATS or RTR; {@code rndv/put/zcopy}: ATP or fragments).
 * Loop only.
 */
abstract class RmaTransfer {

    /** The bounce buffer's size: UCX's RNDV_FRAG_SIZE for host memory. */
    static final int BOUNCE_CHUNK = 512 * 1024;

    private final boolean put;
    private final RemoteKey key;
    private final RmaLane lane;
    /** The local side: bytes {@code [start, start + total)} of {@code local}. */
    private final ByteBuf local;
    private final int start;
    final long total;
    private final MemorySegment direct;
    private final EventExecutor executor;
    private final GenericFutureListener<Future<Void>> onDone = this::onDone;
    private final Runnable nextChunk = this::next;
    private ByteBuf bounce;
    private MemorySegment bounceSegment;
    private RmaOp op;
    private long done;
    private boolean cancelled;

    /**
     * @param put   true to write {@code local} into the peer's memory, false to read the peer's memory into it
     * @param alloc where a bounce buffer comes from when {@code local} is heap (the GC moves it: no address for a
     *              system call) or scattered
     */
    RmaTransfer(boolean put, RemoteKey key, RmaLane lane, ByteBuf local, int start, long total, ByteBufAllocator alloc,
                EventExecutor executor) {
        this.put = put;
        this.key = key;
        this.lane = lane;
        this.local = local;
        this.start = start;
        this.total = total;
        this.executor = executor;
        if (local.isDirect() && local.nioBufferCount() == 1) {
            direct = MemorySegment.ofBuffer(local.nioBuffer(start, (int) total));
        } else {
            direct = null;
            int n = (int) Math.min(BOUNCE_CHUNK, total);
            bounce = alloc.directBuffer(n, n);
            bounceSegment = MemorySegment.ofBuffer(bounce.nioBuffer(0, n));
        }
    }

    /** The whole message has been moved (the bounce buffer is back). */
    abstract void finished();

    /** An operation failed at run time (EPERM, ESRCH, EFAULT; the bounce buffer is back). */
    abstract void failed(Throwable cause);

    /** Starts the transfer, or its next chunk. */
    final void next() {
        if (cancelled) {
            return;
        }
        if (direct != null) {
            op = put ? RmaOp.put(key, 0, direct) : RmaOp.get(key, 0, direct);
        } else {
            int n = (int) Math.min(BOUNCE_CHUNK, total - done);
            MemorySegment chunk = bounceSegment.asSlice(0, n);
            if (put) {
                bounce.setBytes(0, local, start + (int) done, n);
            }
            op = put ? RmaOp.put(key, done, chunk) : RmaOp.get(key, done, chunk);
        }
        lane.channel().writeAndFlush(op).addListener(onDone);
    }

    private void onDone(Future<Void> f) {
        if (cancelled) {
            return; // whoever cancelled has dealt with the message
        }
        if (!f.isSuccess()) {
            release();
            failed(f.cause());
            return;
        }
        if (direct == null) {
            int n = (int) op.length();
            if (!put) {
                local.setBytes(start + (int) done, bounce, 0, n);
            }
            done += n;
            if (done < total) {
                executor.execute(nextChunk); // one chunk per loop turn, and no recursion through listeners
                return;
            }
        }
        release();
        finished();
    }

    /**
     * Stops before the next chunk (we run on the lane's loop: none is in progress now) and gives the bounce buffer
     * back.
     */
    final void cancel() {
        cancelled = true;
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
