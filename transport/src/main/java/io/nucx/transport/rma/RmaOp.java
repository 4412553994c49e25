package io.nucx.transport.rma;

import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * One RMA operation, written to an {@link RmaLane}'s channel (UCT's {@code uct_ep_get_zcopy}, {@code put_zcopy},
 * {@code atomic64_fetch} and {@code atomic_cswap64}):
 * <table>
 *   <caption>operations</caption>
 *   <tr><th>GET</th><td>reads {@code local.byteSize()} bytes at {@code key.address + remoteOffset} into
 *       {@code local}</td></tr>
 *   <tr><th>PUT</th><td>writes {@code local} there</td></tr>
 *   <tr><th>FETCH_ADD</th><td>adds {@code operand} to the 64-bit word there; {@link #result()} is the word
 *       before</td></tr>
 *   <tr><th>SWAP</th><td>stores {@code operand} there; {@link #result()} is the word before</td></tr>
 *   <tr><th>COMPARE_SWAP</th><td>stores {@code operand} if the word equals {@code compare}; {@link #result()} is the
 *       word before (equal to {@code compare} when it stored)</td></tr>
 * </table>
 * The write's promise completes when the operation is done (the data are there, or the atomic's result is known) and
 * fails with the transport's {@link RmaException} otherwise. Words of atomics are little-endian host words, aligned to
 * 8 bytes in the peer's address space.
 *
 * <p>{@code local} must stay valid until the promise completes, or until {@link #cancel()} has been called on the
 * lane's loop: a transport moves GET and PUT in segments (a few per loop turn, so one large operation does not hold the
 * loop) and checks for a cancel between them; a cancelled operation touches no more memory and fails with
 * {@link java.util.concurrent.CancellationException}. {@link #done()} says how far it got.
 *
 * <p>Made and read by protocols; {@link #advance} and {@link #complete} are for the transport that performs it.
 * Not thread-safe: the lane's loop only.
 */
public final class RmaOp {

    public enum Kind {
        GET, PUT, FETCH_ADD, SWAP, COMPARE_SWAP;

        /** FETCH_ADD, SWAP and COMPARE_SWAP: one 64-bit word, with a result. */
        public boolean isAtomic() {
            return this != GET && this != PUT;
        }
    }

    /** Bytes of the word an atomic operates on. */
    public static final int ATOMIC_SIZE = Long.BYTES;

    private final Kind kind;
    private final RemoteKey key;
    private final long remoteOffset;
    private final MemorySegment local;
    private final long operand;
    private final long compare;
    private long done;
    private long result;
    private boolean cancelled;

    private RmaOp(Kind kind, RemoteKey key, long remoteOffset, MemorySegment local, long operand, long compare) {
        this.kind = kind;
        this.key = Objects.requireNonNull(key, "key");
        this.remoteOffset = remoteOffset;
        this.local = local;
        this.operand = operand;
        this.compare = compare;
        long length = length();
        if (remoteOffset < 0 || length > key.length() || remoteOffset > key.length() - length) {
            throw new IllegalArgumentException(kind + " of [" + remoteOffset + ", +" + length + ") lies outside the "
                    + key.length() + "-byte remote region " + key);
        }
        if (kind.isAtomic() && ((key.address() + remoteOffset) & (ATOMIC_SIZE - 1)) != 0) {
            throw new IllegalArgumentException(kind + " at remote address 0x" + Long.toHexString(key.address()
                    + remoteOffset) + " is not aligned to " + ATOMIC_SIZE + " bytes");
        }
    }

    /** Reads the peer's bytes at {@code remoteOffset} of {@code key} into {@code into}. */
    public static RmaOp get(RemoteKey key, long remoteOffset, MemorySegment into) {
        return new RmaOp(Kind.GET, key, remoteOffset, Objects.requireNonNull(into, "into"), 0, 0);
    }

    /** Writes {@code from} to the peer's bytes at {@code remoteOffset} of {@code key}. */
    public static RmaOp put(RemoteKey key, long remoteOffset, MemorySegment from) {
        return new RmaOp(Kind.PUT, key, remoteOffset, Objects.requireNonNull(from, "from"), 0, 0);
    }

    /** Adds {@code delta} to the peer's word; the result is the word before. */
    public static RmaOp fetchAdd(RemoteKey key, long remoteOffset, long delta) {
        return new RmaOp(Kind.FETCH_ADD, key, remoteOffset, null, delta, 0);
    }

    /** Stores {@code value} in the peer's word; the result is the word before. */
    public static RmaOp swap(RemoteKey key, long remoteOffset, long value) {
        return new RmaOp(Kind.SWAP, key, remoteOffset, null, value, 0);
    }

    /** Stores {@code value} in the peer's word if it equals {@code expected}; the result is the word before. */
    public static RmaOp compareAndSwap(RemoteKey key, long remoteOffset, long expected, long value) {
        return new RmaOp(Kind.COMPARE_SWAP, key, remoteOffset, null, value, expected);
    }

    public Kind kind() {
        return kind;
    }

    public RemoteKey key() {
        return key;
    }

    /** Where in the remote region the operation starts. */
    public long remoteOffset() {
        return remoteOffset;
    }

    /** GET's destination or PUT's source; null for atomics. */
    public MemorySegment local() {
        return local;
    }

    /** Bytes the operation moves: {@code local}'s size, or {@link #ATOMIC_SIZE} for an atomic. */
    public long length() {
        return local != null ? local.byteSize() : ATOMIC_SIZE;
    }

    /** An atomic's operand: the value added, swapped in, or stored when the compare succeeds. */
    public long operand() {
        return operand;
    }

    /** COMPARE_SWAP's expected value. */
    public long compare() {
        return compare;
    }

    /** Bytes moved so far. */
    public long done() {
        return done;
    }

    /** An atomic's result (the remote word before it), valid once the write's promise has succeeded. */
    public long result() {
        return result;
    }

    /** Stops the operation before its next segment (the lane's loop only). */
    public void cancel() {
        cancelled = true;
    }

    public boolean isCancelled() {
        return cancelled;
    }

    /** Transport: {@code bytes} more have been moved. */
    public void advance(long bytes) {
        if (bytes < 0 || bytes > length() - done) {
            throw new IllegalArgumentException("advance by " + bytes + " with " + done + " of " + length() + " done");
        }
        done += bytes;
    }

    /** Transport: an atomic is done, the remote word was {@code previous}. */
    public void complete(long previous) {
        if (!kind.isAtomic()) {
            throw new IllegalStateException(kind + " has no result");
        }
        result = previous;
        done = ATOMIC_SIZE;
    }

    /** Whether every byte has been moved (or the atomic completed). */
    public boolean isDone() {
        return done == length();
    }

    @Override
    public String toString() {
        return kind + " " + length() + " B at +" + remoteOffset + " of " + key + " (" + done + " done"
                + (cancelled ? ", cancelled)" : ")");
    }
}
