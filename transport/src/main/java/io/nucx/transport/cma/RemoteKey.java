package io.nucx.transport.cma;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * What a peer needs to read or write a region of this process with cross-memory attach: the host id (both must run on
 * one kernel), the pid, the virtual address and the length. Packed little-endian, 28 bytes:
 * <pre>
 *  +-----------------+---------+-----------------+-----------------+
 *  |   host id:u64   | pid:u32 |   address:u64   |   length:u64    |
 *  +-----------------+---------+-----------------+-----------------+
 * </pre>
 * The exposing side must keep the memory alive (a confined or shared arena, a direct buffer it holds) until the
 * peer says it is done; a native segment or direct buffer only: a heap array has no stable address.
 */
public record RemoteKey(long hostId, int pid, long address, long length) {

    public static final int PACKED_LENGTH = 28;

    public RemoteKey {
        if (address == 0 || length < 0) {
            throw new IllegalArgumentException("remote key needs a non-null address and a length >= 0 (address 0x"
                    + Long.toHexString(address) + ", length " + length + ")");
        }
    }

    /** A key for a native segment of this process. */
    public static RemoteKey of(MemorySegment segment) {
        if (!segment.isNative()) {
            throw new IllegalArgumentException("cross-memory attach needs native memory; a heap segment has no "
                    + "address another process could read");
        }
        return new RemoteKey(io.nucx.transport.HostId.get(), Cma.pid(), segment.address(), segment.byteSize());
    }

    /** A key for a direct buffer's remaining bytes. */
    public static RemoteKey of(ByteBuffer direct) {
        if (!direct.isDirect()) {
            throw new IllegalArgumentException("cross-memory attach needs a direct buffer");
        }
        return of(MemorySegment.ofBuffer(direct));
    }

    public byte[] pack() {
        return ByteBuffer.allocate(PACKED_LENGTH).order(ByteOrder.LITTLE_ENDIAN).putLong(hostId).putInt(pid)
                .putLong(address).putLong(length).array();
    }

    public static RemoteKey unpack(byte[] packed) {
        if (packed.length != PACKED_LENGTH) {
            throw new IllegalArgumentException("remote key is " + packed.length + " bytes, expected " + PACKED_LENGTH);
        }
        ByteBuffer b = ByteBuffer.wrap(packed).order(ByteOrder.LITTLE_ENDIAN);
        return new RemoteKey(b.getLong(), b.getInt(), b.getLong(), b.getLong());
    }
}
