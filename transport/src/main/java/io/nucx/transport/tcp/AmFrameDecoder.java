package io.nucx.transport.tcp;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.handler.codec.CorruptedFrameException;
import io.netty.handler.codec.TooLongFrameException;
import io.nucx.transport.AmFrame;
import io.nucx.transport.Buffers;

import java.util.List;

import static io.nucx.transport.tcp.AmFrameLayout.AM_ID_OFFSET;
import static io.nucx.transport.tcp.AmFrameLayout.FLAGS_OFFSET;
import static io.nucx.transport.tcp.AmFrameLayout.HEADER_LENGTH_OFFSET;
import static io.nucx.transport.tcp.AmFrameLayout.PAYLOAD_LENGTH_OFFSET;
import static io.nucx.transport.tcp.AmFrameLayout.PREFIX_LENGTH;

/**
 * Splits a byte stream into {@link AmFrame}s ({@link AmFrameLayout}). The reader index is left alone until a whole
 * frame is there; lengths over the limits raise {@link TooLongFrameException} naming the value and the limit
 * before anything is buffered, and the lane's handler closes only that connection.
 */
public final class AmFrameDecoder extends ByteToMessageDecoder {

    /** Payloads up to this size are copied out of the cumulation, larger ones sliced ({@link #copy}). */
    static final int COPY_PAYLOAD = 1024;

    private final int maxHeader;
    private final long maxPayload;

    public AmFrameDecoder(int maxHeader, long maxPayload) {
        this.maxHeader = maxHeader;
        this.maxPayload = maxPayload;
    }

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
        while (in.readableBytes() >= PREFIX_LENGTH) {
            int start = in.readerIndex();
            int amId = in.getUnsignedByte(start + AM_ID_OFFSET);
            int flags = in.getUnsignedByte(start + FLAGS_OFFSET);
            int headerLength = in.getUnsignedShortLE(start + HEADER_LENGTH_OFFSET);
            long payloadLength = in.getUnsignedIntLE(start + PAYLOAD_LENGTH_OFFSET);
            if (amId == 0) {
                in.skipBytes(in.readableBytes()); // the stream is lost: do not report it again on close
                throw new CorruptedFrameException("frame with am id 0 (reserved) at stream offset "
                        + start + " from " + ctx.channel().remoteAddress());
            }
            if (headerLength > maxHeader) {
                in.skipBytes(in.readableBytes()); // the stream is lost: do not report it again on close
                throw new TooLongFrameException("frame header length " + headerLength + " exceeds limit "
                        + maxHeader + " (am id " + amId + ") from " + ctx.channel().remoteAddress());
            }
            if (payloadLength > maxPayload) {
                in.skipBytes(in.readableBytes()); // the stream is lost: do not report it again on close
                throw new TooLongFrameException("frame payload length " + payloadLength + " exceeds limit "
                        + maxPayload + " (am id " + amId + ") from " + ctx.channel().remoteAddress());
            }
            int frameLength = PREFIX_LENGTH + headerLength + (int) payloadLength;
            if (in.readableBytes() < frameLength) {
                return;
            }
            ByteBuf header = copy(ctx, in, start + PREFIX_LENGTH, headerLength);
            int payloadAt = start + PREFIX_LENGTH + headerLength;
            ByteBuf payload = payloadLength == 0 ? io.netty.buffer.Unpooled.EMPTY_BUFFER
                    : payloadLength <= COPY_PAYLOAD ? copy(ctx, in, payloadAt, (int) payloadLength)
                    : in.retainedSlice(payloadAt, (int) payloadLength);
            in.readerIndex(start + frameLength);
            out.add(AmFrame.of(amId, flags, header, payload));
            if (ctx.isRemoved()) {
                return;
            }
        }
    }

    /**
     * Headers and small payloads are copied into pooled buffers of their own rather than sliced out of the cumulation:
     * Netty's default allocator makes a new object for each slice, and for a few bytes the copy costs less than the
     * allocation (and lets the cumulation be reused sooner). Larger payloads are slices: no copy.
     */
    private static ByteBuf copy(ChannelHandlerContext ctx, ByteBuf in, int index, int length) {
        ByteBuf out = ctx.alloc().heapBuffer(length, length);
        Buffers.copy(in, index, out, 0, length);
        return out.writerIndex(length);
    }

    @Override
    protected void decodeLast(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
        decode(ctx, in, out);
        if (in.isReadable()) {
            int pending = in.readableBytes();
            in.skipBytes(pending);
            throw new CorruptedFrameException("connection from " + ctx.channel().remoteAddress()
                    + " closed in the middle of a frame (" + pending + " bytes of it received)");
        }
    }
}
