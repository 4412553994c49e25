package io.nucx.protocol.amo;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * What a peer needs to operate on memory a worker registered: the owner's worker uuid, the region id, the region's
 * base address and length, so that an operation names an address as it would locally (UCX's remote address + rkey),
 * and the region's secret: 64 random bits ({@code SecureRandom}) the owner checks on every operation, as a NIC checks
 * an rkey, so a peer that was not given the key cannot find or touch the region by probing ids and addresses. Packed
 * as 36 bytes, little-endian, to travel out of band like a worker address.
 */
public record RemoteMemoryKey(long workerUuid, int region, long base, long length, long secret) {

    public static final int PACKED_LENGTH = 36;

    /** A key without its secret (0): the owner refuses every operation through it. For tests of refusals. */
    public RemoteMemoryKey(long workerUuid, int region, long base, long length) {
        this(workerUuid, region, base, length, 0);
    }

    /** Whether the 8-byte word at {@code address} lies inside the region. */
    public boolean covers(long address) {
        return address >= base && address - base <= length - 8;
    }

    public byte[] pack() {
        return ByteBuffer.allocate(PACKED_LENGTH).order(ByteOrder.LITTLE_ENDIAN).putLong(workerUuid).putInt(region)
                .putLong(base).putLong(length).putLong(secret).array();
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
        long secret = b.getLong();
        if (length < 8 || base == 0) {
            throw new IllegalArgumentException("remote memory key with base " + Long.toHexString(base) + " and "
                    + length + " bytes: no 8-byte word fits");
        }
        return new RemoteMemoryKey(uuid, region, base, length, secret);
    }

    /** The secret stays out of logs and messages. */
    @Override
    public String toString() {
        return "RemoteMemoryKey(worker " + Long.toHexString(workerUuid) + ", region " + region + ", "
                + Long.toHexString(base) + " +" + length + ")";
    }

    public String toHex() {
        return java.util.HexFormat.of().formatHex(pack());
    }

    public static RemoteMemoryKey fromHex(String hex) {
        return unpack(java.util.HexFormat.of().parseHex(hex));
    }
}
