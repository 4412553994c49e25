package io.nucx.transport.rdma;

import io.nucx.transport.rma.RemoteKey;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A peer's registered region as RDMA reaches it: virtual address, length, rkey, and the token of the protection
 * domain it was registered in (the same token the peer's endpoint address carries, so a lane knows the key is its
 * peer's). Packed little-endian, 28 bytes:
 * <pre>
 *  +---------------+---------------+----------+-----------------+
 *  |  address:u64  |  length:u64   | rkey:u32 |  pd token:u64   |
 *  +---------------+---------------+----------+-----------------+
 * </pre>
 */
public record RdmaRemoteKey(long address, long length, int rkey, long pdToken) implements RemoteKey {

    public static final int PACKED_LENGTH = 28;

    public RdmaRemoteKey {
        if (address == 0 || length < 0) {
            throw new IllegalArgumentException("rdma remote key needs an address and a length >= 0 (0x"
                    + Long.toHexString(address) + ", " + length + ")");
        }
    }

    @Override
    public byte[] pack() {
        return ByteBuffer.allocate(PACKED_LENGTH).order(ByteOrder.LITTLE_ENDIAN).putLong(address).putLong(length)
                .putInt(rkey).putLong(pdToken).array();
    }

    @Override
    public String toString() {
        return "rdma key 0x" + Long.toHexString(address) + "+" + length + " rkey 0x" + Integer.toHexString(rkey);
    }
}
