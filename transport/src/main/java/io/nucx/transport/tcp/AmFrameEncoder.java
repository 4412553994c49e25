package io.nucx.transport.tcp;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.nucx.transport.AmFrame;
import io.nucx.transport.Buffers;
import io.nucx.transport.IfaceAttributes;
import io.nucx.transport.ShortFrameWriter;

/**
 * Writes {@link AmFrame}s as {@link AmFrameLayout}. Small frames are copied into one buffer; larger payloads go
 * out as their own buffer behind the prefix, so the socket gathers them without a copy. The frame's promise is
 * completed by the write that carries its last byte. A frame over the iface's limits fails its write
 * ({@link IfaceAttributes#checkFrame}), the pipeline hears of it ({@code exceptionCaught}, as from any lane:
 * {@link io.nucx.transport.AbstractLaneChannel}), and nothing of it is written.
 *
 * <p>Short frames given as their parts ({@link ShortFrameWriter}) between two flushes are copied one after the other
 * into a shared buffer of up to {@link #BATCH_CAPACITY} bytes, which goes into the channel's outbound buffer at the
 * next flush, or before the next frame written the ordinary way, so the order of the lane's frames is kept: one
 * pooled buffer per batch of sends rather than one per send (UCT tcp's send buffer), and one entry to gather. One per
 * channel.
 */
public final class AmFrameEncoder extends ChannelOutboundHandlerAdapter implements ShortFrameWriter {

    /** Payloads up to this size are copied next to the prefix: one small write beats two. */
    static final int COPY_THRESHOLD = 1024;
    /** The most bytes of short frames one batch buffer holds (and the channel does not count yet). */
    static final int BATCH_CAPACITY = 16 * 1024;
    /** A batch buffer's first capacity: a latency run's one frame per flush takes no more than this. */
    private static final int BATCH_START = 512;

    private final IfaceAttributes limits;
    /** Short frames written since the last flush, not yet in the channel's outbound buffer; or null. */
    private ByteBuf batch;

    /** @param limits the iface's attributes, whose frame limits every frame is checked against */
    public AmFrameEncoder(IfaceAttributes limits) {
        this.limits = limits;
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        writeBatch(ctx); // the short frames written before this go first
        if (!(msg instanceof AmFrame frame)) {
            ctx.write(msg, promise);
            return;
        }
        ByteBuf prefix = null;
        try {
            limits.checkFrame(frame, ctx.channel());
            ByteBuf header = frame.header();
            ByteBuf payload = frame.payload();
            int headerLength = header.readableBytes();
            int payloadLength = payload.readableBytes();
            boolean copyPayload = payloadLength <= COPY_THRESHOLD;
            prefix = ctx.alloc().directBuffer(AmFrameLayout.PREFIX_LENGTH + headerLength
                    + (copyPayload ? payloadLength : 0));
            prefix.writeByte(frame.amId());
            prefix.writeByte(frame.flags());
            prefix.writeShortLE(headerLength);
            prefix.writeIntLE(payloadLength);
            Buffers.append(header, header.readerIndex(), prefix, headerLength);
            if (copyPayload) {
                Buffers.append(payload, payload.readerIndex(), prefix, payloadLength);
                ByteBuf out = prefix;
                prefix = null;
                ctx.write(out, promise);
            } else {
                ByteBuf out = prefix;
                prefix = null;
                ctx.write(out, ctx.voidPromise());
                ctx.write(payload.retain(), promise);
            }
        } catch (Throwable t) {
            if (prefix != null) {
                prefix.release();
            }
            promise.tryFailure(t); // a void promise tells the pipeline itself
            if (!promise.isVoid()) {
                ctx.fireExceptionCaught(t); // as every lane does: the frame is lost, the lane's handler decides
            }
        } finally {
            frame.release();
        }
    }

    /** Into this flush's batch buffer; a batch that cannot take the frame goes into the outbound buffer first. */
    @Override
    public boolean writeShort(ChannelHandlerContext ctx, int amId, long header, ByteBuf payload) {
        int payloadLength = payload.readableBytes();
        if (!limits.fits(Long.BYTES, Long.BYTES + payloadLength)) {
            return false;
        }
        int frameLength = AmFrameLayout.PREFIX_LENGTH + Long.BYTES + payloadLength;
        ByteBuf out = batch;
        if (out != null && out.maxWritableBytes() < frameLength) {
            writeBatch(ctx);
            out = null;
        }
        if (out == null) {
            int max = Math.max(BATCH_CAPACITY, frameLength);
            out = ctx.alloc().directBuffer(Math.min(Math.max(BATCH_START, 4 * frameLength), max), max);
            batch = out;
        } else if (out.writableBytes() < frameLength) {
            batch = out = Buffers.grow(out, frameLength); // not ensureWritable: a NIO view per growth
        }
        int at = out.writerIndex();
        out.setByte(at + AmFrameLayout.AM_ID_OFFSET, amId);
        out.setByte(at + AmFrameLayout.FLAGS_OFFSET, 0);
        out.setShortLE(at + AmFrameLayout.HEADER_LENGTH_OFFSET, Long.BYTES);
        out.setIntLE(at + AmFrameLayout.PAYLOAD_LENGTH_OFFSET, payloadLength);
        out.setLongLE(at + AmFrameLayout.PREFIX_LENGTH, header);
        out.writerIndex(at + AmFrameLayout.PREFIX_LENGTH + Long.BYTES);
        Buffers.append(payload, payload.readerIndex(), out, payloadLength);
        return true;
    }

    @Override
    public void flush(ChannelHandlerContext ctx) {
        writeBatch(ctx);
        ctx.flush();
    }

    /** The batch of short frames into the channel's outbound buffer, if there is one. */
    private void writeBatch(ChannelHandlerContext ctx) {
        ByteBuf out = batch;
        if (out != null) {
            batch = null;
            ctx.write(out, ctx.voidPromise());
        }
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        ByteBuf out = batch;
        if (out != null) {
            batch = null;
            out.release(); // the channel closed without a flush after them, as the frames of an unflushed write
        }
    }
}
