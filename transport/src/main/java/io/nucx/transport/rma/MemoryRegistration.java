package io.nucx.transport.rma;

import io.netty.util.concurrent.Future;

/**
 * Local memory exposed to an {@link RmaLane}'s peer (UCP's {@code ucp_mem_map} plus {@code ucp_rkey_pack}): the peer
 * may GET, PUT and apply atomics to it, with the key it unpacks from {@link #packedKey()}, until the registration
 * ends. The caller keeps the memory alive at least that long.
 *
 * <p>It ends one of two ways, and whichever comes first wins (the other then does nothing more):
 * <ul>
 *   <li>{@link #close()}: the caller knows the peer is done with the memory (UCX's ATS/ATP told it), or keeps the
 *       memory alive whatever the peer does. Ends at once.</li>
 *   <li>{@link #revoke()}: the peer is not known to be done (it failed, its endpoint ended) and the memory is to be
 *       reused. The future completes when the peer <b>can no longer</b> read or write the memory, and only then may the
 *       memory be released. A transport that can withdraw access (rdma deregisters the memory region) completes at
 *       once; one that cannot (cma: the kernel lets a process of the same user write ours whatever we do) completes
 *       when the peer process has exited, which may be never.</li>
 * </ul>
 * Made and used on the lane's loop.
 */
public interface MemoryRegistration {

    /** The bytes the peer gives its {@link RmaLane#unpackKey}; their length is the transport's. Do not modify. */
    byte[] packedKey();

    /** The registered memory's start in this process. */
    long address();

    /** The registered memory's length in bytes. */
    long length();

    /** Ends the registration at once: the peer is known to be done, or the memory is kept alive regardless. */
    void close();

    /**
     * Withdraws the peer's access; the future completes when the peer can no longer touch the memory (see the class
     * comment: at once, or when the peer's process has exited). It fails if the registration is {@link #close()}d
     * first (with {@link java.util.concurrent.CancellationException}) or the lane's loop shuts down before. Calling it
     * again returns the same future.
     */
    Future<Void> revoke();
}
