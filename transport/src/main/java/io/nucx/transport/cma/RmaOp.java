package io.nucx.transport.cma;

import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * One RMA operation written to a {@link CmaChannel}: GET reads {@code local.byteSize()} bytes at
 * {@code key.address + remoteOffset} of the peer into {@code local}; PUT writes {@code local} there. The channel
 * performs it {@link Cma#CHUNK} bytes per event-loop turn and completes the write's promise when all of it is done.
 *
 * <p>{@code local} must stay valid until the promise completes, or until {@link #cancel()} has been called on the
 * loop: a cancelled operation touches no more memory and fails with {@link java.util.concurrent.CancellationException}.
 */
public final class RmaOp {

    public enum Kind { GET, PUT }

    private final Kind kind;
    private final RemoteKey key;
    private final long remoteOffset;
    private final MemorySegment local;
    private long done;
    private boolean cancelled;

    private RmaOp(Kind kind, RemoteKey key, long remoteOffset, MemorySegment local) {
        this.kind = kind;
        this.key = Objects.requireNonNull(key, "key");
        this.remoteOffset = remoteOffset;
        this.local = Objects.requireNonNull(local, "local");
    }

    public static RmaOp get(RemoteKey key, long remoteOffset, MemorySegment into) {
        return new RmaOp(Kind.GET, key, remoteOffset, into);
    }

    public static RmaOp put(RemoteKey key, long remoteOffset, MemorySegment from) {
        return new RmaOp(Kind.PUT, key, remoteOffset, from);
    }

    public Kind kind() {
        return kind;
    }

    public RemoteKey key() {
        return key;
    }

    public long length() {
        return local.byteSize();
    }

    /** Bytes transferred so far. */
    public long done() {
        return done;
    }

    /** Stops the operation before its next chunk (loop thread only). */
    public void cancel() {
        cancelled = true;
    }

    boolean isCancelled() {
        return cancelled;
    }

    /** Moves the next chunk; true when the whole operation is done. */
    boolean step(Cma cma) throws CmaException {
        long n = Math.min(Cma.CHUNK, local.byteSize() - done);
        MemorySegment part = local.asSlice(done, n);
        if (kind == Kind.GET) {
            cma.get(key, remoteOffset + done, part);
        } else {
            cma.put(key, remoteOffset + done, part);
        }
        done += n;
        return done == local.byteSize();
    }

    @Override
    public String toString() {
        return kind + " " + length() + " B at +" + remoteOffset + " of pid " + key.pid() + " (" + done + " done)";
    }
}
