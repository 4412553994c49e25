package io.nucx.transport.cma;

import io.netty.buffer.ByteBuf;
import io.nucx.transport.HostId;
import io.nucx.transport.rma.InvalidRemoteKeyException;
import io.nucx.transport.rma.RemoteKey;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * cma's remote key: what a peer needs to read or write a region of this process with cross-memory attach, the host id
 * (both must run on one kernel), the pid, the virtual address and the length. Packed little-endian, 28 bytes:
 * <pre>
 *  +-----------------+---------+-----------------+-----------------+
 *  |   host id:u64   | pid:u32 |   address:u64   |   length:u64    |
 *  +-----------------+---------+-----------------+-----------------+
 * </pre>
 * Nothing in it is secret: the kernel checks on every call that we may access the pid (same user or
 * CAP_SYS_PTRACE), so a key only says where.
 */
public record CmaKey(long hostId, int pid, long address, long length) implements RemoteKey {

    public static final int PACKED_LENGTH = 28;

    public CmaKey {
        if (address == 0 || length < 0) {
            throw new IllegalArgumentException("cma remote key needs a non-null address and a length >= 0 (address 0x"
                    + Long.toHexString(address) + ", length " + length + ")");
        }
    }

    /** A key for a native segment of this process. */
    public static CmaKey of(MemorySegment segment) {
        if (!segment.isNative()) {
            throw new IllegalArgumentException("cross-memory attach needs native memory; a heap segment has no "
                    + "address another process could read (the GC moves it)");
        }
        if (segment.address() == 0) {
            throw new IllegalArgumentException("cross-memory attach cannot expose the null address");
        }
        return new CmaKey(HostId.get(), Cma.pid(), segment.address(), segment.byteSize());
    }

    /** A key for a direct buffer's remaining bytes. */
    public static CmaKey of(ByteBuffer direct) {
        if (!direct.isDirect()) {
            throw new IllegalArgumentException("cross-memory attach needs a direct buffer");
        }
        return of(MemorySegment.ofBuffer(direct));
    }

    @Override
    public byte[] pack() {
        return ByteBuffer.allocate(PACKED_LENGTH).order(ByteOrder.LITTLE_ENDIAN).putLong(hostId).putInt(pid)
                .putLong(address).putLong(length).array();
    }

    /** The key in {@code packed}; checks the length and the fields, not whose memory it is. */
    public static CmaKey unpack(byte[] packed) {
        if (packed.length != PACKED_LENGTH) {
            throw new IllegalArgumentException("cma remote key is " + packed.length + " bytes, expected "
                    + PACKED_LENGTH + " (host id, pid, address, length)");
        }
        ByteBuffer b = ByteBuffer.wrap(packed).order(ByteOrder.LITTLE_ENDIAN);
        return new CmaKey(b.getLong(), b.getInt(), b.getLong(), b.getLong());
    }

    /**
     * The key in {@code packed}'s readable bytes (indexes unchanged), checked to name memory of process {@code pid} on
     * this host.
     */
    static CmaKey unpack(ByteBuf packed, int pid) throws InvalidRemoteKeyException {
        int n = packed.readableBytes();
        if (n != PACKED_LENGTH) {
            throw new InvalidRemoteKeyException("cma remote key is " + n + " bytes, expected " + PACKED_LENGTH
                    + " (host id, pid, address, length)");
        }
        int at = packed.readerIndex();
        long host = packed.getLongLE(at);
        int keyPid = packed.getIntLE(at + 8);
        long address = packed.getLongLE(at + 12);
        long length = packed.getLongLE(at + 20);
        if (host != HostId.get()) {
            throw new InvalidRemoteKeyException("cma remote key names host id " + Long.toHexString(host)
                    + "; this host is " + Long.toHexString(HostId.get()));
        }
        if (keyPid != pid) {
            throw new InvalidRemoteKeyException("cma remote key names memory of pid " + keyPid
                    + "; this lane's peer is pid " + pid);
        }
        if (address == 0 || length < 0) {
            throw new InvalidRemoteKeyException("cma remote key names no region (address 0x"
                    + Long.toHexString(address) + ", length " + length + ")");
        }
        return new CmaKey(host, keyPid, address, length);
    }

    @Override
    public String toString() {
        return "cma key pid " + pid + " 0x" + Long.toHexString(address) + "+" + length;
    }
}
