/**
 * The transport RMA interface: how protocols reach remote memory without knowing the transport (UCT's zero-copy
 * GET/PUT and atomics, with UCP's memory mapping and remote keys). cma and rdma's RC channel implement it;
 * nothing above the transport layer imports a concrete transport package.
 *
 * <h2>What a transport implements</h2>
 * <ul>
 *   <li>Its RMA lane channel implements {@link io.nucx.transport.rma.RmaLane}: {@code channel()} takes
 *       {@link io.nucx.transport.rma.RmaOp}s as writes and completes each write's promise when the operation is done
 *       (fails it with an {@link io.nucx.transport.rma.RmaException} naming the call and error; an unsupported kind,
 *       a key it did not unpack, a cancel each fail the write, never the lane); {@code supports(kind)} says which
 *       kinds it performs.</li>
 *   <li>{@code register(segment)} exposes local memory to the lane's peer and returns a
 *       {@link io.nucx.transport.rma.MemoryRegistration} whose {@code packedKey()} the protocol sends to the peer
 *       (length-prefixed: each transport's key has its own length; cma's is 28 bytes, rdma's carries its rkey). Heap
 *       memory is refused with an {@link java.lang.IllegalArgumentException} saying why.</li>
 *   <li>{@code unpackKey(bytes)} turns the peer's packed key into a {@link io.nucx.transport.rma.RemoteKey} and
 *       checks it names the peer's memory; anything else is an
 *       {@link io.nucx.transport.rma.InvalidRemoteKeyException} naming what is wrong (a protocol then treats the
 *       frame that carried it as malformed), never a crash.</li>
 *   <li>Its iface implements {@link io.nucx.transport.rma.RmaIface}: {@code registerMemory(segment)} registers memory
 *       once for the lanes of every peer (UCP's {@code ucp_mem_map} per memory domain; the worker bundles one key per
 *       device for its peers, and a rendezvous GET offer can go out before the lanes are connected).</li>
 *   <li>A GET or PUT larger than one transport call moves in segments
 *       ({@link io.nucx.transport.IfaceAttributes#rmaSegment()}), a few per loop turn (the next turn taken with a
 *       scheduled task, which waits for the turn's I/O, not a queued one, which does not), checking
 *       {@link io.nucx.transport.rma.RmaOp#isCancelled()} between them and recording progress with
 *       {@link io.nucx.transport.rma.RmaOp#advance}.</li>
 * </ul>
 *
 * <h2>The revoke contract (the PUT safety rule's foundation)</h2>
 * A registration ends by {@code close()} when the peer is known to be done with the memory (the protocol heard its
 * last word: UCX's ATS or ATP), or by {@code revoke()} when it is not. The future {@code revoke()} returns completes
 * only when the peer <b>can no longer</b> read or write that memory; until then the memory must stay allocated and
 * must not be given back to its user, because the peer may still write into it. Each transport keeps that promise its
 * own way:
 * <ul>
 *   <li>rdma deregisters the memory region ({@code ibv_dereg_mr}): the NIC refuses the rkey from then on, so the
 *       future completes at once;</li>
 *   <li>cma cannot withdraw access: the kernel lets any process of the same user (or with CAP_SYS_PTRACE) write our
 *       memory with {@code process_vm_writev}, key or no key. Its future completes when the peer's process has exited,
 *       watched with a pidfd opened with the lane's first registration (so a reused pid cannot fool it; else
 *       {@code kill(pid, 0)}, which errs towards waiting) and polled on the lane's loop. A stopped or hung peer holds
 *       the memory for as long as it stays so: no bound on our side can be honest about that.</li>
 * </ul>
 * The contract holds after the lane's channel has closed: a revoke still completes when the peer is gone.
 */
package io.nucx.transport.rma;
