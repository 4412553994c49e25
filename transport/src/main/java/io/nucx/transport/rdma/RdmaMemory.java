package io.nucx.transport.rdma;

import java.lang.foreign.MemorySegment;

/**
 * A native segment registered with one rdma iface's protection domain ({@code ibv_reg_mr_iova2}, or
 * {@code ibv_reg_mr} on rdma-core older than 28) for local writes, remote reads and writes and remote atomics.
 * {@link #remoteKey()} is what a peer needs to reach it; {@link #revoke()} deregisters it, after which the device
 * refuses the peer's operations with that key (the peer's request completes with IBV_WC_REM_ACCESS_ERR).
 * The owner keeps the segment alive until it revokes.
 */
public final class RdmaMemory {

    private final RdmaIface iface;
    private final MemorySegment segment;
    private final MemorySegment mr;
    private final int lkey;
    private final int rkey;
    private volatile boolean revoked;

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
        return new RdmaRemoteKey(segment.address(), segment.byteSize(), rkey);
    }

    /** The key packed for a peer ({@link RdmaRemoteKey#pack()}). */
    public byte[] packedKey() {
        return remoteKey().pack();
    }

    int lkey() {
        return lkey;
    }

    RdmaIface iface() {
        return iface;
    }

    boolean isRevoked() {
        return revoked;
    }

    /** Whether {@code s} lies inside the registered segment. */
    boolean contains(MemorySegment s) {
        return s.isNative() && s.address() >= segment.address()
                && s.address() + s.byteSize() <= segment.address() + segment.byteSize();
    }

    /** Deregisters the region ({@code ibv_dereg_mr}); the remote key stops working. Idempotent. */
    public synchronized void revoke() throws VerbsException {
        if (revoked) {
            return;
        }
        revoked = true;
        int rc;
        try {
            rc = (int) iface.context().verbs.deregMr.invokeExact(mr);
        } catch (Throwable t) {
            throw new IllegalStateException("ibv_dereg_mr downcall failed", t);
        }
        if (rc != 0) {
            throw new VerbsException("ibv_dereg_mr", rc);
        }
    }

    @Override
    public String toString() {
        return "rdma memory 0x" + Long.toHexString(segment.address()) + "+" + segment.byteSize() + " rkey 0x"
                + Integer.toHexString(rkey) + " on " + iface + (revoked ? " (revoked)" : "");
    }
}
