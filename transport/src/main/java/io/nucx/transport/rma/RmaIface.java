package io.nucx.transport.rma;

import java.lang.foreign.MemorySegment;

/**
 * An iface whose lanes perform remote memory access, seen as a memory domain (UCX's {@code uct_md} behind
 * {@code ucp_mem_map}): memory registered here once may be reached by the lanes of <b>every</b> peer of this iface,
 * with the key {@link MemoryRegistration#packedKey()} gives, where {@link RmaLane#register} exposes memory to one lane's
 * peer. A worker registers with each of its RMA ifaces and sends the keys together, so each peer picks the key of the
 * device its lane reaches.
 *
 * <p>Such a registration ends with {@link MemoryRegistration#close()}, when the owner knows its peers are done.
 * {@link MemoryRegistration#revoke()} keeps the transport's promise: rdma deregisters the region (at once); cma cannot
 * take access away from processes it does not know, so its future fails with {@link UnsupportedOperationException}.
 */
public interface RmaIface {

    /**
     * Exposes {@code local} to the RMA lanes of every peer of this iface (any thread).
     *
     * @throws IllegalArgumentException for memory this transport cannot expose, saying why (heap memory: the GC moves
     *                                  it)
     * @throws IllegalStateException    when the transport refused the registration (the error named)
     */
    MemoryRegistration registerMemory(MemorySegment local);
}
