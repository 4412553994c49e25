package io.nucx.wireup;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.channel.PendingWriteQueue;

import io.netty.buffer.ByteBuf;
import io.netty.util.ReferenceCountUtil;
import io.nucx.transport.AmFrame;
import io.nucx.EndpointException;
import io.nucx.protocol.LimitExceededException;
import io.nucx.protocol.MemoryBudget;

import java.nio.channels.ClosedChannelException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The first handler of an endpoint that is still wiring up (UCX's wireup_ep proxy). Every write is queued with its
 * promise, in order, and counts toward the endpoint's writability; a flush is remembered. When the lanes are connected
 * the wireup replaces this handler with the {@link LaneDispatcher} ({@code pipeline.replace}); on removal the queued
 * writes replay in order through the dispatcher that took its place. If the endpoint fails first, every queued write
 * is failed and released, once. A close while wiring up waits: it follows the replay (so it is graceful and flushes
 * the queued writes), or follows the failure.
 */
final class StubHandler extends ChannelOutboundHandlerAdapter {

    /** Bytes queued here, charged to the endpoint's and the worker's bound (NUCX_STUB_EP_BYTES, _WORKER_BYTES). */
    private final MemoryBudget budget;
    private long charged;
    private PendingWriteQueue pending;
    /** The worker's count of writes waiting in stubs, for metrics; null when nobody asks. */
    private final AtomicInteger waiting;
    private boolean flushRequested;
    private boolean ready;
    private Throwable failure;
    private ChannelPromise deferredClose;

    /** Without a count or a bound: handler tests. */
    StubHandler() {
        this(null, MemoryBudget.unlimited());
    }

    /**
     * @param waiting counts the writes waiting here (for metrics read from other threads), or null
     * @param budget  bounds the bytes waiting here (NUCX_STUB_EP_BYTES, inside the worker's NUCX_STUB_WORKER_BYTES)
     */
    StubHandler(AtomicInteger waiting, MemoryBudget budget) {
        this.waiting = waiting;
        this.budget = budget;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        pending = new PendingWriteQueue(ctx);
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        if (failure != null) {
            ReferenceCountUtil.release(msg);
            promise.tryFailure(failure);
            return;
        }
        long added = msg instanceof AmFrame f ? f.length() : msg instanceof ByteBuf b ? b.readableBytes() : 0;
        pending.add(msg, promise);
        if (waiting != null) {
            waiting.incrementAndGet();
        }
        try {
            if (!budget.tryCharge(added + MemoryBudget.ENTRY_COST)) { // the text only for the error, as below
                budget.charge(added + MemoryBudget.ENTRY_COST, "writes queued while wiring up (" + pending.size()
                        + " writes, " + pending.bytes() + " bytes)");
            }
            charged += added + MemoryBudget.ENTRY_COST;
        } catch (LimitExceededException e) {
            EndpointChannel ep = (EndpointChannel) ctx.channel();
            ep.fail(new EndpointException(ep.endpointId(), ep.remoteAddress(), "the peer has not answered wireup "
                    + "while writes piled up: " + e.getMessage(), e));
        }
    }

    @Override
    public void flush(ChannelHandlerContext ctx) {
        flushRequested = true;
    }

    @Override
    public void close(ChannelHandlerContext ctx, ChannelPromise promise) {
        if (failure != null || ready) {
            ctx.close(promise); // a failing endpoint closes now
        } else if (deferredClose == null) {
            deferredClose = promise;
        } else {
            deferredClose.addListener(f -> promise.trySuccess()); // a second close while the first waits
        }
    }

    /** Marks the lanes connected; the replay happens when the wireup removes this handler. */
    void ready() {
        ready = true;
    }

    /** Wireup failed: queued writes fail with {@code cause} when this handler goes. */
    void fail(Throwable cause) {
        if (failure == null) {
            failure = cause;
        }
    }

    /** Writes waiting, for tests and diagnostics. */
    int queued() {
        return pending == null ? 0 : pending.size();
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        budget.release(charged);
        charged = 0;
        if (waiting != null) {
            waiting.addAndGet(-pending.size());
        }
        if (ready && failure == null && ctx.channel().isOpen()) {
            // ctx's neighbours now point at the handler that replaced us, so these writes go through it.
            pending.removeAndWriteAll();
            if (flushRequested) {
                ctx.flush();
            }
        } else {
            pending.removeAndFailAll(failure != null ? failure : new ClosedChannelException());
        }
        if (deferredClose != null) {
            ctx.close(deferredClose); // reaches the dispatcher that replaced us, or the head if the endpoint failed
        }
    }
}
