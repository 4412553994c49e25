package io.nucx.transport.rdma;

import io.netty.util.concurrent.Future;
import io.nucx.transport.rma.MemoryRegistration;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.CancellationException;

/**
 * A native segment registered with one rdma iface's protection domain ({@code ibv_reg_mr_iova2}, or
 * {@code ibv_reg_mr} on rdma-core older than 28) for local writes, remote reads and writes and remote atomics.
 * Its {@link #packedKey()} is an {@link RdmaRemoteKey}. {@link #revoke()} deregisters the region: from then on the
 * device refuses the peer's requests with that key (they complete with IBV_WC_REM_ACCESS_ERR on the peer), so the
 * future completes at once; {@link #close()} deregisters too. The owner keeps the segment alive until then.
 */
public final class RdmaMemory implements MemoryRegistration {

    private final RdmaIface iface;
    private final MemorySegment segment;
    private final MemorySegment mr;
    private final int lkey;
    private final int rkey;
    private boolean ended;
    private Future<Void> revoked;

    RdmaMemory(RdmaIface iface, MemorySegment segment, MemorySegment mr) {
        this.iface = iface;
        this.segment = segment;
        this.mr = mr;
        this.lkey = IbvMr.lkey(mr);
        this.rkey = IbvMr.rkey(mr);
    }

    public MemorySegment segment() {
        return segment;
    }

    public RdmaRemoteKey remoteKey() {
        return new RdmaRemoteKey(segment.address(), segment.byteSize(), rkey, iface.pdToken());
    }

    @Override
    public byte[] packedKey() {
        return remoteKey().pack();
    }

    @Override
    public long address() {
        return segment.address();
    }

    @Override
    public long length() {
        return segment.byteSize();
    }

    int lkey() {
        return lkey;
    }

    RdmaIface iface() {
        return iface;
    }

    /** Whether {@code address .. address + n} lies inside the registered segment. */
    boolean contains(long address, long n) {
        return address >= segment.address() && n >= 0 && address - segment.address() <= segment.byteSize() - n;
    }

    /** Deregisters the region ({@code ibv_dereg_mr}); the peer's key stops working. */
    @Override
    public synchronized void close() {
        if (ended) {
            return;
        }
        try {
            deregister();
        } catch (VerbsException e) {
            throw new IllegalStateException(e.getMessage(), e);
        }
    }

    /** Deregisters the region; the future completes at once, the device refusing the key from then on. */
    @Override
    public synchronized Future<Void> revoke() {
        if (revoked != null) {
            return revoked;
        }
        if (ended) {
            return revoked = iface.eventLoop().newFailedFuture(new CancellationException(this + " was closed"));
        }
        try {
            deregister();
            return revoked = iface.eventLoop().newSucceededFuture(null);
        } catch (VerbsException e) {
            return revoked = iface.eventLoop().newFailedFuture(e);
        }
    }

    private void deregister() throws VerbsException {
        ended = true;
        iface.forget(this);
        int rc;
        try {
            rc = (int) iface.context().verbs.deregMr.invokeExact(mr);
        } catch (Throwable t) {
            throw new IllegalStateException("ibv_dereg_mr downcall failed", t);
        }
        if (rc != 0) {
            throw new VerbsException("ibv_dereg_mr(" + this + ")", rc);
        }
    }

    @Override
    public String toString() {
        return "rdma memory 0x" + Long.toHexString(segment.address()) + "+" + segment.byteSize() + " rkey 0x"
                + Integer.toHexString(rkey) + " on " + iface;
    }
}
