package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.nucx.protocol.ProtocolException;
import io.nucx.transport.cma.RemoteKey;

/**
 * Header layouts of the rendezvous protocols, little-endian.
 *
 * <pre>
 * RNDV_RTS   +----------------+--------------------+----------------+
 *            |    tag:u64     | sender req id:u64  |   size:u64     |     tag/rndv: 24 bytes
 *            +----------------+--------------------+----------------+
 *   rndv/get/zcopy appends the sender's remote key (54 bytes in all):
 *            +-----------------+---------------------------------------------------+
 *            | rkey length:u16 | rkey: host id:u64, pid:u32, address:u64, len:u64  |  (28 bytes, {@link RemoteKey})
 *            +-----------------+---------------------------------------------------+
 * RNDV_RTR   +--------------------+----------------------+----------------+
 *            | sender req id:u64  | receiver req id:u64  |   size:u64     |     24 bytes: send RNDV_DATA
 *            +--------------------+----------------------+----------------+
 *   rndv/put/zcopy appends the receive buffer's remote key, the same way (54 bytes in all): write the message there
 *   (offset 0, all {@code size} bytes), then send RNDV_ATP.
 * RNDV_DATA  +----------------------+----------------+
 *            | receiver req id:u64  |   offset:u64   |  + payload bytes at offset
 *            +----------------------+----------------+
 * RNDV_ATS   +--------------------+-----------+
 *            | sender req id:u64  | status:i8 |   (0 ok, -9 truncated: the receive buffer was smaller)
 *            +--------------------+-----------+
 * RNDV_ATP   +----------------------+-----------+------------+
 *            | receiver req id:u64  | status:i8 |  size:u64  |   (UCX's ack header; 17 bytes)
 *            +----------------------+-----------+------------+
 *   status 0: all {@code size} bytes were written; -16 (cancelled): the sender stopped and will not write, size = 0.
 *   Either way it is the sender's last word on that receive buffer.
 * </pre>
 * The tag comes first in RTS, as in the eager headers, so one matcher serves both. A key-carrying RTS or RTR is told
 * from a plain one by its length.
 */
public final class RndvHeaders {
    public static final int RTS_LENGTH = 24;
    /** An RTS with a remote key: the 24 bytes, the key's length (u16), the packed key. */
    public static final int RTS_RKEY_LENGTH = RTS_LENGTH + 2 + RemoteKey.PACKED_LENGTH;
    public static final int RTR_LENGTH = 24;
    /** An RTR with the receive buffer's remote key: the 24 bytes, the key's length (u16), the packed key. */
    public static final int RTR_RKEY_LENGTH = RTR_LENGTH + 2 + RemoteKey.PACKED_LENGTH;
    public static final int DATA_LENGTH = 16;
    public static final int ATS_LENGTH = 9;
    public static final int ATP_LENGTH = 17;

    /** UCS_OK. */
    public static final int STATUS_OK = 0;
    /** UCS_ERR_MESSAGE_TRUNCATED. */
    public static final int STATUS_TRUNCATED = -9;
    /** UCS_ERR_CANCELED: in an ATP, the sender stopped before writing everything and will write nothing more. */
    public static final int STATUS_CANCELED = -16;

    private RndvHeaders() {
    }

    /** Writes an RTS header; with {@code key} non-null, the remote key the receiver may GET the data with. */
    public static ByteBuf writeRts(ByteBuf out, long tag, long senderReqId, long size, RemoteKey key) {
        out.writeLongLE(tag).writeLongLE(senderReqId).writeLongLE(size);
        return writeKey(out, key);
    }

    /** Writes an RTR header; with {@code key} non-null, the receive buffer the sender may PUT the data into. */
    public static ByteBuf writeRtr(ByteBuf out, long senderReqId, long receiverReqId, long size, RemoteKey key) {
        out.writeLongLE(senderReqId).writeLongLE(receiverReqId).writeLongLE(size);
        return writeKey(out, key);
    }

    /** Writes an ATP header. */
    public static ByteBuf writeAtp(ByteBuf out, long receiverReqId, int status, long size) {
        return out.writeLongLE(receiverReqId).writeByte(status).writeLongLE(size);
    }

    private static ByteBuf writeKey(ByteBuf out, RemoteKey key) {
        if (key != null) {
            byte[] packed = key.pack();
            out.writeShortLE(packed.length).writeBytes(packed);
        }
        return out;
    }

    /**
     * The remote key of an RTS header (reader index at the start of the header), or null for a plain RTS.
     *
     * @throws ProtocolException when the header has a length no RTS has, a key length other than a cma key's, or a
     *                           key that does not cover exactly the announced message
     */
    public static RemoteKey readRtsKey(ByteBuf h) {
        return readKey(h, "RNDV_RTS", RTS_LENGTH, 16);
    }

    /**
     * The remote key of an RTR header (reader index at the start of the header), or null for a plain RTR.
     *
     * @throws ProtocolException as {@link #readRtsKey}: a length no RTR has, a bad key length, or a key that does not
     *                           cover exactly the asked size
     */
    public static RemoteKey readRtrKey(ByteBuf h) {
        return readKey(h, "RNDV_RTR", RTR_LENGTH, 16);
    }

    private static RemoteKey readKey(ByteBuf h, String what, int plainLength, int sizeOffset) {
        int n = h.readableBytes();
        int withKey = plainLength + 2 + RemoteKey.PACKED_LENGTH;
        if (n == plainLength) {
            return null;
        }
        if (n < plainLength + 2) {
            throw new ProtocolException(what + " header is " + n + " bytes, expected " + plainLength + " or "
                    + withKey + " (with a remote key)");
        }
        int at = h.readerIndex();
        int keyLength = h.getUnsignedShortLE(at + plainLength);
        if (keyLength != RemoteKey.PACKED_LENGTH) {
            throw new ProtocolException(what + " remote key length is " + keyLength + ", expected "
                    + RemoteKey.PACKED_LENGTH + " (host id, pid, address, length)");
        }
        if (n != withKey) {
            throw new ProtocolException(what + " with a " + keyLength + "-byte remote key is " + n
                    + " bytes, expected " + withKey);
        }
        byte[] packed = new byte[keyLength];
        h.getBytes(at + plainLength + 2, packed);
        RemoteKey key;
        try {
            key = RemoteKey.unpack(packed);
        } catch (IllegalArgumentException e) {
            throw new ProtocolException(what + " remote key is invalid: " + e.getMessage());
        }
        long size = h.getLongLE(at + sizeOffset);
        if (key.length() != size) {
            throw new ProtocolException(what + " remote key covers " + key.length() + " bytes of a " + size
                    + "-byte message");
        }
        return key;
    }
}
