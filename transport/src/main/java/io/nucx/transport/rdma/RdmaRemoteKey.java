package io.nucx.transport.rdma;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * What a peer needs to reach a registered region with RDMA READ/WRITE and atomics: its virtual address, length and
 * rkey. Packed little-endian, 20 bytes:
 * <pre>
 *  +---------------+---------------+----------+
 *  |  address:u64  |  length:u64   | rkey:u32 |
 *  +---------------+---------------+----------+
 * </pre>
 */
public record RdmaRemoteKey(long address, long length, int rkey) {

    public static final int PACKED_LENGTH = 20;

    public RdmaRemoteKey {
        if (address == 0 || length < 0) {
            throw new IllegalArgumentException("rdma remote key needs an address and a length >= 0 (0x"
                    + Long.toHexString(address) + ", " + length + ")");
        }
    }

    public byte[] pack() {
        return ByteBuffer.allocate(PACKED_LENGTH).order(ByteOrder.LITTLE_ENDIAN).putLong(address).putLong(length)
                .putInt(rkey).array();
    }

    public static RdmaRemoteKey unpack(byte[] packed) {
        if (packed.length != PACKED_LENGTH) {
            throw new IllegalArgumentException("rdma remote key of " + packed.length + " bytes, expected "
                    + PACKED_LENGTH);
        }
        ByteBuffer b = ByteBuffer.wrap(packed).order(ByteOrder.LITTLE_ENDIAN);
        return new RdmaRemoteKey(b.getLong(), b.getLong(), b.getInt());
    }

    /** Whether [offset, offset + length) lies inside the region. */
    boolean covers(long offset, long n) {
        return offset >= 0 && n >= 0 && offset <= length - n;
    }
}
