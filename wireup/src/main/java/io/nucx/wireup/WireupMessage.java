package io.nucx.wireup;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.ProtocolException;
import io.nucx.transport.AmFrame;

/**
 * A wireup message (AM id {@link AmIds#WIREUP}), with UCX's header ({@code ucp_wireup_msg_t}); the packed worker
 * address of the sender is the payload.
 *
 * <pre>
 *  +--------+----------+-----------+------------------+------------------+
 *  |  type  | err mode |  conn sn  |  src ep id       |  dst ep id       |
 *  |   u8   |    u8    |    u16    |      u64         |      u64         |  + worker address
 *  +--------+----------+-----------+------------------+------------------+
 * </pre>
 */
record WireupMessage(int type, int errMode, int connSn, long srcEpId, long dstEpId, WorkerAddress address) {

    static final int REQUEST = 1;
    static final int HEADER_LENGTH = 20;
    /** No endpoint id known yet. */
    static final long INVALID_EP_ID = -1L;
    static final int ERR_MODE_NONE = 0;

    AmFrame toFrame(ByteBufAllocator alloc) {
        ByteBuf header = alloc.buffer(HEADER_LENGTH).writeByte(type).writeByte(errMode).writeShortLE(connSn)
                .writeLongLE(srcEpId).writeLongLE(dstEpId);
        return AmFrame.of(AmIds.WIREUP, 0, header, Unpooled.wrappedBuffer(address.encode()));
    }

    /** Parses a wireup frame (does not release it). */
    static WireupMessage from(AmFrame frame) {
        ByteBuf h = frame.header();
        if (h.readableBytes() != HEADER_LENGTH) {
            throw new ProtocolException("wireup header is " + h.readableBytes() + " bytes, expected " + HEADER_LENGTH);
        }
        int at = h.readerIndex();
        int type = h.getUnsignedByte(at);
        if (type != REQUEST) {
            throw new ProtocolException("wireup message type " + type + " is not handled by this version");
        }
        byte[] blob = new byte[frame.payload().readableBytes()];
        frame.payload().getBytes(frame.payload().readerIndex(), blob);
        WorkerAddress address;
        try {
            address = WorkerAddress.decode(blob);
        } catch (InvalidAddressException e) {
            throw new ProtocolException("wireup REQUEST carries a bad worker address: " + e.getMessage());
        }
        return new WireupMessage(type, h.getUnsignedByte(at + 1), h.getUnsignedShortLE(at + 2), h.getLongLE(at + 4),
                h.getLongLE(at + 12), address);
    }
}
