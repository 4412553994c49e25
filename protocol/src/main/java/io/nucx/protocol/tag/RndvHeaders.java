package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.nucx.protocol.ProtocolException;
import io.nucx.transport.cma.RemoteKey;

/**
 * Header layouts of the rendezvous protocol over active messages (UCX's {@code rndv/am}), little-endian.
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
 *            | sender req id:u64  | receiver req id:u64  |   size:u64     |
 *            +--------------------+----------------------+----------------+
 * RNDV_DATA  +----------------------+----------------+
 *            | receiver req id:u64  |   offset:u64   |  + payload bytes at offset
 *            +----------------------+----------------+
 * RNDV_ATS   +--------------------+-----------+
 *            | sender req id:u64  | status:i8 |   (0 ok, -9 truncated: the receive buffer was smaller)
 *            +--------------------+-----------+
 * </pre>
 * The tag comes first in RTS, as in the eager headers, so one matcher serves both.
 */
public final class RndvHeaders {
    public static final int RTS_LENGTH = 24;
    /** An RTS with a remote key: the 24 bytes, the key's length (u16), the packed key. */
    public static final int RTS_RKEY_LENGTH = RTS_LENGTH + 2 + RemoteKey.PACKED_LENGTH;
    public static final int RTR_LENGTH = 24;
    public static final int DATA_LENGTH = 16;
    public static final int ATS_LENGTH = 9;

    /** UCS_OK. */
    public static final int STATUS_OK = 0;
    /** UCS_ERR_MESSAGE_TRUNCATED. */
    public static final int STATUS_TRUNCATED = -9;

    private RndvHeaders() {
    }

    /** Writes an RTS header; with {@code key} non-null, the remote key the receiver may GET the data with. */
    public static ByteBuf writeRts(ByteBuf out, long tag, long senderReqId, long size, RemoteKey key) {
        out.writeLongLE(tag).writeLongLE(senderReqId).writeLongLE(size);
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
        int n = h.readableBytes();
        if (n == RTS_LENGTH) {
            return null;
        }
        if (n < RTS_LENGTH + 2) {
            throw new ProtocolException("RNDV_RTS header is " + n + " bytes, expected " + RTS_LENGTH + " or "
                    + RTS_RKEY_LENGTH + " (with a remote key)");
        }
        int at = h.readerIndex();
        int keyLength = h.getUnsignedShortLE(at + RTS_LENGTH);
        if (keyLength != RemoteKey.PACKED_LENGTH) {
            throw new ProtocolException("RNDV_RTS remote key length is " + keyLength + ", expected "
                    + RemoteKey.PACKED_LENGTH + " (host id, pid, address, length)");
        }
        if (n != RTS_RKEY_LENGTH) {
            throw new ProtocolException("RNDV_RTS with a " + keyLength + "-byte remote key is " + n
                    + " bytes, expected " + RTS_RKEY_LENGTH);
        }
        byte[] packed = new byte[keyLength];
        h.getBytes(at + RTS_LENGTH + 2, packed);
        RemoteKey key;
        try {
            key = RemoteKey.unpack(packed);
        } catch (IllegalArgumentException e) {
            throw new ProtocolException("RNDV_RTS remote key is invalid: " + e.getMessage());
        }
        long size = h.getLongLE(at + 16);
        if (key.length() != size) {
            throw new ProtocolException("RNDV_RTS remote key covers " + key.length() + " bytes of a " + size
                    + "-byte message");
        }
        return key;
    }
}
