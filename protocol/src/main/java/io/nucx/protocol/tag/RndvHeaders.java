package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.nucx.protocol.ProtocolException;

/**
 * Header layouts of the rendezvous protocols, little-endian.
 *
 * <pre>
 * RNDV_RTS   +----------------+--------------------+----------------+
 *            |    tag:u64     | sender req id:u64  |   size:u64     |     tag/rndv: 24 bytes
 *            +----------------+--------------------+----------------+
 *   rndv/get/zcopy appends the send buffer's packed remote keys (one cma key: 57 bytes in all):
 *            +-----------------+------------------------------------------------+
 *            | key length:u16  | a KeyBundle: the RMA transports' own keys, one |   (cma: 28, host id, pid,
 *            |                 | per device of the sender's RMA lanes           |    address, length)
 *            +-----------------+------------------------------------------------+
 * RNDV_RTR   +--------------------+----------------------+----------------+-----------------+
 *            | sender req id:u64  | receiver req id:u64  |   size:u64     | placed frag:u32 |  28 bytes: send RNDV_DATA
 *            +--------------------+----------------------+----------------+-----------------+
 *   placed frag: the largest RNDV_DATA payload the receiver places straight into the receive buffer as it arrives,
 *   beyond the lanes' fragment size (tcp reading into the user's buffer: the whole message as one frame, as UCT tcp's
 *   PUT_ZCOPY); 0 for the sender's own fragments.
 *   rndv/put/zcopy appends the receive buffer's packed remote key, the same way: write the message there
 *   (offset 0, all {@code size} bytes), then send RNDV_ATP.
 * RNDV_DATA  +----------------------+----------------+
 *            | receiver req id:u64  |   offset:u64   |  + payload bytes at offset
 *            +----------------------+----------------+
 *   frame flag {@link #DATA_FLAG_ATS}: the payloads are the sender's own memory, handed over as they are (self);
 *   answer with ATS(ok) once the whole message has arrived, which ends the send.
 * RNDV_ATS   +--------------------+-----------+
 *            | sender req id:u64  | status:i8 |   (0 ok, -9 truncated: the receive buffer was smaller,
 *            +--------------------+-----------+    -5: no handler for the active message's id)
 * RNDV_ATP   +----------------------+-----------+------------+
 *            | receiver req id:u64  | status:i8 |  size:u64  |   (UCX's ack header; 17 bytes)
 *            +----------------------+-----------+------------+
 *   status 0: all {@code size} bytes were written; -16 (cancelled): the sender stopped and will not write, size = 0.
 *   Either way it is the sender's last word on that receive buffer.
 * </pre>
 * An AM_RTS has RNDV_RTS's header and the active message's user header as its payload.
 * The tag comes first in RTS, as in the eager headers, so one matcher serves both. A key-carrying RTS or RTR is told
 * from a plain one by its length. The keys are opaque here: each RMA lane that uses one unpacks and checks it
 * ({@link RndvKeys}).
 */
public final class RndvHeaders {
    public static final int RTS_LENGTH = 24;
    public static final int RTR_LENGTH = 28;
    public static final int DATA_LENGTH = 16;
    public static final int ATS_LENGTH = 9;
    public static final int ATP_LENGTH = 17;
    /** Bounds a packed key's length field: far above any transport's key, far below a frame's header limit. */
    public static final int MAX_KEY_LENGTH = 1024;
    /**
     * An RNDV_DATA frame flag (a protocol bit of {@link io.nucx.transport.AmFrame#flags}): the receiver answers with
     * an ATS once it has all the message's bytes, since the sender's send waits for that to end.
     */
    public static final int DATA_FLAG_ATS = 0x01;

    /** UCS_OK. */
    public static final int STATUS_OK = 0;
    /** UCS_ERR_MESSAGE_TRUNCATED. */
    public static final int STATUS_TRUNCATED = -9;
    /** UCS_ERR_INVALID_PARAM: in an ATS, the receiver has no handler for the active message's id. */
    public static final int STATUS_NO_HANDLER = -5;
    /** UCS_ERR_CANCELED: in an ATP, the sender stopped before writing everything and will write nothing more. */
    public static final int STATUS_CANCELED = -16;

    private RndvHeaders() {
    }

    /** Bytes of an RTS header carrying {@code packedKey} (null: a plain RTS). */
    public static int rtsLength(byte[] packedKey) {
        return RTS_LENGTH + keyLength(packedKey);
    }

    /** Bytes of an RTR header carrying {@code packedKey} (null: a plain RTR). */
    public static int rtrLength(byte[] packedKey) {
        return RTR_LENGTH + keyLength(packedKey);
    }

    private static int keyLength(byte[] packedKey) {
        return packedKey == null ? 0 : 2 + packedKey.length;
    }

    /** Writes an RTS header; with {@code packedKey} non-null, the key the receiver may GET the data with. */
    public static ByteBuf writeRts(ByteBuf out, long tag, long senderReqId, long size, byte[] packedKey) {
        out.writeLongLE(tag).writeLongLE(senderReqId).writeLongLE(size);
        return writeKey(out, packedKey);
    }

    /** Writes an RTR header; with {@code packedKey} non-null, the receive buffer the sender may PUT the data into. */
    public static ByteBuf writeRtr(ByteBuf out, long senderReqId, long receiverReqId, long size, byte[] packedKey) {
        return writeRtr(out, senderReqId, receiverReqId, size, 0, packedKey);
    }

    /**
     * Writes an RTR header offering RNDV_DATA fragments of up to {@code placedFragment} payload bytes (0: the sender's
     * own); with {@code packedKey} non-null, the receive buffer the sender may PUT the data into.
     */
    public static ByteBuf writeRtr(ByteBuf out, long senderReqId, long receiverReqId, long size, int placedFragment,
                                   byte[] packedKey) {
        if (placedFragment < 0) {
            throw new IllegalArgumentException("placed fragment " + placedFragment + " < 0");
        }
        out.writeLongLE(senderReqId).writeLongLE(receiverReqId).writeLongLE(size).writeIntLE(placedFragment);
        return writeKey(out, packedKey);
    }

    /**
     * The largest fragment an RTR header (reader index at its start, its length checked by {@link #readRtrKey})
     * offers to place; 0 for the sender's own fragments.
     *
     * @throws ProtocolException for a value over {@link Integer#MAX_VALUE}
     */
    public static int readRtrPlacedFragment(ByteBuf h) {
        long v = h.getUnsignedIntLE(h.readerIndex() + 24);
        if (v > Integer.MAX_VALUE) {
            throw new ProtocolException("RNDV_RTR placed fragment is " + v + " bytes, expected at most "
                    + Integer.MAX_VALUE);
        }
        return (int) v;
    }

    /** Writes an ATP header. */
    public static ByteBuf writeAtp(ByteBuf out, long receiverReqId, int status, long size) {
        return out.writeLongLE(receiverReqId).writeByte(status).writeLongLE(size);
    }

    private static ByteBuf writeKey(ByteBuf out, byte[] packedKey) {
        if (packedKey != null) {
            if (packedKey.length == 0 || packedKey.length > MAX_KEY_LENGTH) {
                throw new IllegalArgumentException("a packed remote key of " + packedKey.length + " bytes (1 to "
                        + MAX_KEY_LENGTH + ")");
            }
            out.writeShortLE(packedKey.length).writeBytes(packedKey);
        }
        return out;
    }

    /**
     * The packed remote key of an RTS header (reader index at the start of the header): a slice of {@code h}, valid
     * while it is; null for a plain RTS.
     *
     * @throws ProtocolException when the header has a length no RTS has, or a key length that disagrees with it
     */
    public static ByteBuf readRtsKey(ByteBuf h) {
        return readKey(h, "RNDV_RTS", RTS_LENGTH);
    }

    /**
     * The packed remote key of an RTR header (reader index at the start of the header), as {@link #readRtsKey}.
     *
     * @throws ProtocolException as {@link #readRtsKey}
     */
    public static ByteBuf readRtrKey(ByteBuf h) {
        return readKey(h, "RNDV_RTR", RTR_LENGTH);
    }

    private static ByteBuf readKey(ByteBuf h, String what, int plainLength) {
        int n = h.readableBytes();
        if (n == plainLength) {
            return null;
        }
        if (n < plainLength + 2) {
            throw new ProtocolException(what + " header is " + n + " bytes, expected " + plainLength
                    + " or more than " + (plainLength + 2) + " (with a remote key)");
        }
        int at = h.readerIndex();
        int keyLength = h.getUnsignedShortLE(at + plainLength);
        if (keyLength == 0 || keyLength > MAX_KEY_LENGTH) {
            throw new ProtocolException(what + " remote key length is " + keyLength + ", expected 1 to "
                    + MAX_KEY_LENGTH);
        }
        if (n != plainLength + 2 + keyLength) {
            throw new ProtocolException(what + " remote key length is " + keyLength + ", but the header has "
                    + (n - plainLength - 2) + " bytes after it (" + n + " in all)");
        }
        return h.slice(at + plainLength + 2, keyLength);
    }
}
