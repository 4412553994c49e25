package io.nucx.transport.rma;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;

import java.lang.foreign.MemorySegment;

/**
 * A lane that performs remote memory access to one peer (UCT's endpoint of an iface with GET/PUT/ATOMIC capabilities,
 * together with its memory domain). Implemented by an RMA-capable transport channel (cma's {@code CmaChannel}).
 * Everything here runs on the lane's loop.
 */
public interface RmaLane {

    /**
     * The channel {@link RmaOp}s are written to. A write's promise completes when the operation is done and fails with
     * an {@link RmaException} naming the error (or {@link java.util.concurrent.CancellationException} once cancelled,
     * {@link UnsupportedOperationException} for a kind this lane does not {@link #supports perform}, an
     * {@link IllegalArgumentException} for a key this lane did not unpack).
     */
    Channel channel();

    /** Whether this lane performs {@code kind} (cma: GET and PUT; no atomics). */
    boolean supports(RmaOp.Kind kind);

    /**
     * Exposes {@code local} to this lane's peer (UCX's {@code ucp_mem_map} and {@code ucp_rkey_pack}).
     *
     * @throws IllegalArgumentException when this transport cannot expose that memory, saying why (heap memory: the GC
     *                                  moves it, so no other process or device can address it)
     */
    MemoryRegistration register(MemorySegment local);

    /**
     * Reads a key the peer packed ({@link MemoryRegistration#packedKey()}), from {@code packed}'s readable bytes
     * (its indexes are left alone), and checks that it names memory of this lane's peer (cma: this host and the peer's
     * pid).
     *
     * @throws InvalidRemoteKeyException naming what is wrong: a length or format not this transport's, another host
     *                                   or process, a null region
     */
    RemoteKey unpackKey(ByteBuf packed) throws InvalidRemoteKeyException;

    /**
     * Performs {@code op} at once, as the channel's write would, when this lane can do it there and then: on its loop,
     * nothing written before it still queued, and small enough to do in one step (cma: one system call). True when
     * done; false, having done nothing, when the caller must write it to {@link #channel()} instead. Saves what a write
     * costs beside the operation (its promise, the outbound queue, the flush), which for a small rendezvous read is
     * a good part of it.
     *
     * @throws RmaException the operation's failure, as the write's promise would have failed with it
     */
    default boolean performNow(RmaOp op) throws RmaException {
        return false;
    }
}
