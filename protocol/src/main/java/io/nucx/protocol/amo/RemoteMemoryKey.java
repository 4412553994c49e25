package io.nucx.protocol.amo;

import io.netty.buffer.Unpooled;
import io.nucx.protocol.KeyBundle;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;

/**
 * What a peer needs to reach memory a worker registered (UCX's remote address + packed rkey): the owner's worker uuid,
 * the region id (for atomics as active messages), the region's base address and length, so that an operation names an
 * address as it would locally; the region's secret: 64 random bits ({@code SecureRandom}) the owner checks on every
 * operation it serves itself, as a NIC checks an rkey, so a peer that was not given the key cannot find or touch the
 * region by probing ids and addresses; and the transport keys of the region on each of the owner's RMA devices (a
 * {@link KeyBundle}: rdma's rkeys, cma's key) for put, get and device atomics, which the devices check. Packed
 * little-endian, to travel out of band like a worker address:
 * <pre>
 *  +-----------------+------------+----------+------------+------------+-----------------------------------+
 *  | worker uuid:u64 | region:u32 | base:u64 | length:u64 | secret:u64 | key bundle (absent: no RMA device) |
 *  +-----------------+------------+----------+------------+------------+-----------------------------------+
 *   36 bytes, then the bundle
 * </pre>
 */
public record RemoteMemoryKey(long workerUuid, int region, long base, long length, long secret, byte[] transportKeys) {

    /** Bytes before the key bundle; a key without one is exactly this long. */
    public static final int PACKED_LENGTH = 36;

    /** A key without its secret (0) nor transport keys: the owner refuses every operation through it (tests). */
    public RemoteMemoryKey(long workerUuid, int region, long base, long length) {
        this(workerUuid, region, base, length, 0, new byte[0]);
    }

    /** A key without transport keys: atomics as active messages only. */
    public RemoteMemoryKey(long workerUuid, int region, long base, long length, long secret) {
        this(workerUuid, region, base, length, secret, new byte[0]);
    }

    public RemoteMemoryKey {
        transportKeys = transportKeys.clone();
    }

    @Override
    public byte[] transportKeys() {
        return transportKeys.clone();
    }

    /** The transport keys, one per RMA device of the owner; empty when it registered on none. */
    public List<KeyBundle.Key> keys() {
        return transportKeys.length == 0 ? List.of() : KeyBundle.unpack(Unpooled.wrappedBuffer(transportKeys));
    }

    /** Whether the 8-byte word at {@code address} lies inside the region. */
    public boolean covers(long address) {
        return address >= base && address - base <= length - 8;
    }

    /** Whether {@code [address, address + n)} lies inside the region. */
    public boolean covers(long address, long n) {
        return n >= 0 && address >= base && address - base <= length - n;
    }

    public byte[] pack() {
        return ByteBuffer.allocate(PACKED_LENGTH + transportKeys.length).order(ByteOrder.LITTLE_ENDIAN)
                .putLong(workerUuid).putInt(region).putLong(base).putLong(length).putLong(secret).put(transportKeys)
                .array();
    }

    /** The key in {@code packed}; wrong lengths, negative sizes and malformed bundles are refused, naming what. */
    public static RemoteMemoryKey unpack(byte[] packed) {
        if (packed.length < PACKED_LENGTH) {
            throw new IllegalArgumentException("a remote memory key is at least " + PACKED_LENGTH + " bytes, got "
                    + packed.length);
        }
        ByteBuffer b = ByteBuffer.wrap(packed).order(ByteOrder.LITTLE_ENDIAN);
        long uuid = b.getLong();
        int region = b.getInt();
        long base = b.getLong();
        long length = b.getLong();
        long secret = b.getLong();
        if (length < 1 || base == 0) {
            throw new IllegalArgumentException("remote memory key with base " + Long.toHexString(base) + " and "
                    + length + " bytes: no region");
        }
        byte[] keys = Arrays.copyOfRange(packed, PACKED_LENGTH, packed.length);
        if (keys.length > 0) {
            KeyBundle.unpack(Unpooled.wrappedBuffer(keys)); // checks it
        }
        return new RemoteMemoryKey(uuid, region, base, length, secret, keys);
    }

    public String toHex() {
        return HexFormat.of().formatHex(pack());
    }

    public static RemoteMemoryKey fromHex(String hex) {
        return unpack(HexFormat.of().parseHex(hex));
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof RemoteMemoryKey k && k.workerUuid == workerUuid && k.region == region && k.base == base
                && k.length == length && k.secret == secret && Arrays.equals(k.transportKeys, transportKeys);
    }

    @Override
    public int hashCode() {
        return Long.hashCode(workerUuid) * 31 + region * 17 + Long.hashCode(base) + Long.hashCode(secret)
                + Arrays.hashCode(transportKeys);
    }

    /** The secret stays out of logs and messages. */
    @Override
    public String toString() {
        return "RemoteMemoryKey(worker " + Long.toHexString(workerUuid) + ", region " + region + ", 0x"
                + Long.toHexString(base) + "+" + length + ", " + (transportKeys.length == 0 ? "no RMA device"
                : keys().size() + " device key(s)") + ")";
    }
}
