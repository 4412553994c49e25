package io.nucx.transport.cma;

import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import io.nucx.transport.rma.MemoryRegistration;

import java.util.concurrent.CancellationException;

/**
 * Memory of this process exposed to the peer of one cma lane. Registering costs nothing in the kernel (cma needs no
 * pinning: the peer's system calls find our pages through our page tables), so this is only the key and the PUT safety
 * rule's bookkeeping: cma cannot withdraw access, so {@link #revoke()} completes when the peer's process has exited
 * ({@link PeerExit}). Loop only.
 */
final class CmaRegistration implements MemoryRegistration {

    private enum State { EXPOSED, REVOKING, ENDED }

    private final CmaKey key;
    private final byte[] packed;
    private final PeerExit peer;
    private final EventExecutor loop;
    private State state = State.EXPOSED;
    private Future<Void> revoked;

    CmaRegistration(CmaKey key, PeerExit peer, EventExecutor loop) {
        this.key = key;
        this.packed = key.pack();
        this.peer = peer;
        this.loop = loop;
        peer.retain();
    }

    @Override
    public byte[] packedKey() {
        return packed;
    }

    @Override
    public long address() {
        return key.address();
    }

    @Override
    public long length() {
        return key.length();
    }

    @Override
    public void close() {
        switch (state) {
            case EXPOSED -> peer.release();
            case REVOKING -> {
                if (revoked instanceof Promise<Void> p) {
                    peer.cancel(p);
                    p.tryFailure(new CancellationException(this + " closed before its peer's exit"));
                }
                // else already complete: released then
            }
            case ENDED -> {
                return;
            }
            default -> throw new IllegalStateException(state.name());
        }
        state = State.ENDED;
    }

    @Override
    public Future<Void> revoke() {
        if (revoked != null) {
            return revoked;
        }
        if (state == State.ENDED) {
            return revoked = loop.newFailedFuture(new CancellationException(this + " was closed"));
        }
        state = State.REVOKING;
        revoked = peer.whenExited(loop);
        revoked.addListener(f -> {
            if (state == State.REVOKING) {
                state = State.ENDED;
                peer.release();
            }
        });
        return revoked;
    }

    @Override
    public String toString() {
        return "cma registration 0x" + Long.toHexString(key.address()) + "+" + key.length() + " exposed to " + peer;
    }
}
