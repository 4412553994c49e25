package io.nucx.transport.rma;

/**
 * A peer's memory region as this side names it in {@link RmaOp}s (UCP's {@code ucp_rkey_h}): made by
 * {@link RmaLane#unpackKey} from the bytes the peer's {@link MemoryRegistration#packedKey()} gave. Only the lane that
 * unpacked it (or another lane of the same transport to the same peer) can use it; what it holds besides the region is
 * the transport's business (cma: host id and pid; rdma: the rkey).
 */
public interface RemoteKey {

    /** The region's start in the peer's address space. */
    long address();

    /** The region's length in bytes. */
    long length();

    /**
     * The key as the peer packed it: the bytes {@link RmaLane#unpackKey} reads back. Its length is the transport's
     * (a protocol carries it length-prefixed).
     */
    byte[] pack();
}
