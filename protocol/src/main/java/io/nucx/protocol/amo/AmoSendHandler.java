package io.nucx.protocol.amo;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.nucx.protocol.AmIds;
import io.nucx.transport.AmFrame;

import java.util.function.LongSupplier;

/**
 * The atomic protocol's codec (UCX's software atomics, {@code amo/am}): turns an {@link AtomicRequest} into an
 * ATOMIC_REQ frame on the AM lane and parks its result in {@link AtomicRequests} until ATOMIC_REP. A request for
 * another worker's memory, a misaligned address or one outside the key's region fails at once, naming it, and sends
 * nothing. The write's own promise completes when the request has left; the caller waits on the request's result.
 */
public final class AmoSendHandler extends ChannelOutboundHandlerAdapter {

    private final AtomicRequests requests;
    private final LongSupplier peerUuid;

    /** @param peerUuid the uuid of the worker this endpoint talks to (keys name the worker that owns the memory) */
    public AmoSendHandler(AtomicRequests requests, LongSupplier peerUuid) {
        this.requests = requests;
        this.peerUuid = peerUuid;
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        if (!(msg instanceof AtomicRequest r)) {
            ctx.write(msg, promise);
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
        long id = requests.add(ctx.channel(), r);
        ByteBuf header = ctx.alloc().buffer(AmoHeaders.REQ_LENGTH).writeLongLE(id).writeLongLE(r.address())
                .writeLongLE(r.value()).writeLongLE(r.compare()).writeIntLE(r.key().region())
                .writeByte(r.op().wire()).writeZero(3);
        promise.addListener((ChannelFutureListener) f -> {
            if (!f.isSuccess()) {
                requests.failed(id, f.cause());
            }
        });
        ctx.write(AmFrame.of(AmIds.ATOMIC_REQ, header), promise);
    }
}
