package io.nucx.transport.rdma;

import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * One one-sided operation written to an {@link RdmaChannel}: GET (RDMA READ of {@code length} bytes at
 * {@code key.address + remoteOffset} into {@code local}), PUT (RDMA WRITE of {@code local} there), or a 64-bit
 * atomic on the word there (FETCH_ADD: add {@code operand}; CSWAP: replace with {@code swap} if it equals
 * {@code operand}), whose previous value {@link #result()} gives once the write's promise succeeded. The promise
 * completes on the operation's completion entry. {@code local} must lie inside an {@link RdmaMemory} of the channel's
 * iface and stay valid until the promise completes; a transfer longer than the port's largest message goes as
 * several requests, the promise completing with the last.
 */
public final class RdmaRmaOp {

    public enum Kind { GET, PUT, FETCH_ADD, CSWAP }

    private final Kind kind;
    private final RdmaRemoteKey key;
    private final long remoteOffset;
    private final RdmaMemory memory;
    private final MemorySegment local;
    private final long operand;
    private final long swap;
    private long result;

    private RdmaRmaOp(Kind kind, RdmaRemoteKey key, long remoteOffset, RdmaMemory memory, MemorySegment local,
                      long operand, long swap) {
        this.kind = kind;
        this.key = Objects.requireNonNull(key, "key");
        this.remoteOffset = remoteOffset;
        this.memory = memory;
        this.local = local;
        this.operand = operand;
        this.swap = swap;
        long n = kind == Kind.GET || kind == Kind.PUT ? local.byteSize() : 8;
        if (!key.covers(remoteOffset, n)) {
            throw new IllegalArgumentException(kind + " of " + n + " B at +" + remoteOffset + " lies outside the "
                    + key.length() + "-byte remote region");
        }
        if (memory != null && !memory.contains(local)) {
            throw new IllegalArgumentException("the local segment 0x" + Long.toHexString(local.address()) + "+"
                    + local.byteSize() + " is not inside " + memory);
        }
        if ((kind == Kind.FETCH_ADD || kind == Kind.CSWAP) && ((key.address() + remoteOffset) & 7) != 0) {
            throw new IllegalArgumentException(kind + " needs an 8-byte aligned remote word, not 0x"
                    + Long.toHexString(key.address() + remoteOffset));
        }
    }

    public static RdmaRmaOp get(RdmaRemoteKey key, long remoteOffset, RdmaMemory memory, MemorySegment into) {
        return new RdmaRmaOp(Kind.GET, key, remoteOffset, memory, into, 0, 0);
    }

    public static RdmaRmaOp put(RdmaRemoteKey key, long remoteOffset, RdmaMemory memory, MemorySegment from) {
        return new RdmaRmaOp(Kind.PUT, key, remoteOffset, memory, from, 0, 0);
    }

    public static RdmaRmaOp fetchAdd(RdmaRemoteKey key, long remoteOffset, long add) {
        return new RdmaRmaOp(Kind.FETCH_ADD, key, remoteOffset, null, null, add, 0);
    }

    public static RdmaRmaOp compareSwap(RdmaRemoteKey key, long remoteOffset, long expected, long swap) {
        return new RdmaRmaOp(Kind.CSWAP, key, remoteOffset, null, null, expected, swap);
    }

    public Kind kind() {
        return kind;
    }

    public RdmaRemoteKey key() {
        return key;
    }

    long remoteAddress() {
        return key.address() + remoteOffset;
    }

    RdmaMemory memory() {
        return memory;
    }

    MemorySegment local() {
        return local;
    }

    long operand() {
        return operand;
    }

    long swap() {
        return swap;
    }

    /** Bytes moved (8 for atomics). */
    public long length() {
        return local != null ? local.byteSize() : 8;
    }

    /** An atomic's previous value, valid once the write's promise succeeded. */
    public long result() {
        return result;
    }

    void result(long value) {
        result = value;
    }

    @Override
    public String toString() {
        return kind + " " + length() + " B at 0x" + Long.toHexString(remoteAddress()) + " (rkey 0x"
                + Integer.toHexString(key.rkey()) + ")";
    }
}
