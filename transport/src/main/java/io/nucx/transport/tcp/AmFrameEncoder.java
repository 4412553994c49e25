package io.nucx.transport.tcp;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandler;
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
 * ({@link IfaceAttributes#checkFrame}) and nothing of it is written. A short frame given as its parts
 * ({@link ShortFrameWriter}) is written as the same bytes, one buffer. One per iface.
 */
@ChannelHandler.Sharable
public final class AmFrameEncoder extends ChannelOutboundHandlerAdapter implements ShortFrameWriter {

    /** Payloads up to this size are copied next to the prefix: one small write beats two. */
    static final int COPY_THRESHOLD = 1024;

    private final IfaceAttributes limits;

    /** @param limits the iface's attributes, whose frame limits every frame is checked against */
    public AmFrameEncoder(IfaceAttributes limits) {
        this.limits = limits;
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
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
            promise.tryFailure(t);
        } finally {
            frame.release();
        }
    }

    @Override
    public boolean writeShort(ChannelHandlerContext ctx, int amId, long header, ByteBuf payload) {
        int payloadLength = payload.readableBytes();
        if (!limits.fits(Long.BYTES, Long.BYTES + payloadLength)) {
            return false;
        }
        ByteBuf out = ctx.alloc().directBuffer(AmFrameLayout.PREFIX_LENGTH + Long.BYTES + payloadLength);
        try {
            out.writeByte(amId);
            out.writeByte(0);
            out.writeShortLE(Long.BYTES);
            out.writeIntLE(payloadLength);
            out.writeLongLE(header);
            Buffers.append(payload, payload.readerIndex(), out, payloadLength);
        } catch (RuntimeException | Error e) {
            out.release();
            throw e;
        }
        ctx.write(out, ctx.voidPromise());
        return true;
    }
}
