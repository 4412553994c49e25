package io.nucx.protocol.amo;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * What a peer needs to operate on memory a worker registered: the owner's worker uuid, the region id, and the
 * region's base address and length, so that an operation names an address as it would locally (UCX's remote address +
 * rkey). Packed as 28 bytes, little-endian, to travel out of band like a worker address.
 */
public record RemoteMemoryKey(long workerUuid, int region, long base, long length) {

    public static final int PACKED_LENGTH = 28;

    /** Whether the 8-byte word at {@code address} lies inside the region. */
    public boolean covers(long address) {
        return address >= base && address - base <= length - 8;
    }

    public byte[] pack() {
        return ByteBuffer.allocate(PACKED_LENGTH).order(ByteOrder.LITTLE_ENDIAN).putLong(workerUuid).putInt(region)
                .putLong(base).putLong(length).array();
    }

    /** The key in {@code packed}; wrong lengths and negative sizes are refused, naming what was wrong. */
    public static RemoteMemoryKey unpack(byte[] packed) {
        if (packed.length != PACKED_LENGTH) {
            throw new IllegalArgumentException("a remote memory key is " + PACKED_LENGTH + " bytes, got "
                    + packed.length);
        }
        ByteBuffer b = ByteBuffer.wrap(packed).order(ByteOrder.LITTLE_ENDIAN);
        long uuid = b.getLong();
        int region = b.getInt();
        long base = b.getLong();
        long length = b.getLong();
        if (length < 8 || base == 0) {
            throw new IllegalArgumentException("remote memory key with base " + Long.toHexString(base) + " and "
                    + length + " bytes: no 8-byte word fits");
        }
        return new RemoteMemoryKey(uuid, region, base, length);
    }

    public String toHex() {
        return java.util.HexFormat.of().formatHex(pack());
    }

    public static RemoteMemoryKey fromHex(String hex) {
        return unpack(java.util.HexFormat.of().parseHex(hex));
    }
}
