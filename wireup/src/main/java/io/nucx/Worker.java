package io.nucx;

import io.netty.buffer.ByteBuf;
import io.netty.channel.EventLoop;
import io.netty.util.concurrent.Future;
import io.nucx.protocol.ProtocolCounters;
import io.nucx.protocol.amo.RemoteMemoryKey;
import io.nucx.protocol.select.ProtoTable;
import io.nucx.protocol.select.SelectionKey;
import io.nucx.protocol.tag.ReceivePostedAlreadyException;
import io.nucx.protocol.tag.TagMessage;
import io.nucx.protocol.tag.TagReceive;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.Collection;
import java.util.List;

/**
 * UCP's worker, bound to one event loop: it opens one iface per transport, owns its endpoints and its tag matching,
 * and touches them only on that loop, so none of it needs locks. Its methods may be called from any thread; they hand
 * their work to the loop. Start one with {@link NucxBootstrap}.
 */
public interface Worker {

    /** Counter ({@link #counters()}): a {@code connect} that adopted the endpoint an earlier REQUEST of the peer created. */
    String WIREUP_ADOPTED = "wireup/adopted";
    /** Counter: a simultaneous connect's REQUEST from a lower-uuid peer, paired with our waiting endpoint. */
    String WIREUP_REQUEST_PAIRED = "wireup/request-paired";
    /** Counter: a simultaneous connect's REQUEST from a higher-uuid peer, ignored (ours wins). */
    String WIREUP_REQUEST_IGNORED = "wireup/request-ignored";
    /** EP_CHECKs for unknown endpoints left unanswered because their lane took no more (the peer does not read). */
    String EP_CHECK_UNANSWERED = "wireup/ep-check-unanswered";

    /** The name given at start, carried in its address for logs. */
    String name();

    /** A random id, unique per worker; carried in its address. */
    long uuid();

    /** This worker's address, to give to peers ({@link WorkerAddress#encode()}). */
    WorkerAddress address();

    /** The loop every endpoint and lane of this worker runs on. */
    EventLoop eventLoop();

    /** The error mode of endpoints made by {@link #connect(WorkerAddress)} (NUCX_ERR_MODE). */
    ErrorMode defaultErrorMode();

    /**
     * Creates an endpoint to {@code remote} and returns it at once: writes are queued until its lanes connect, then
     * replayed in order. Lane selection happens here, so an unreachable peer fails now ({@link UnreachableException},
     * listing every candidate and why it lost).
     */
    Endpoint connect(WorkerAddress remote);

    /**
     * {@link #connect(WorkerAddress)} with the given error mode; the peer's endpoint takes the same mode.
     *
     * <p>Connections to one peer worker are numbered 0, 1, 2... (per peer uuid). If the peer already connected to us
     * with this number and we created its endpoint on demand, that endpoint is returned (adopted) instead of a second
     * one; it keeps the error mode the peer asked for. If both sides connect to each other at once, they end up with
     * one endpoint pair per number (the lower uuid's connection wins, as in UCX).
     */
    Endpoint connect(WorkerAddress remote, ErrorMode mode);

    /** Connects to the address in its packed form. */
    Endpoint connect(byte[] remoteAddress);

    /** Endpoints currently open, connected here or created on demand when a peer connected to us. */
    Collection<Endpoint> endpoints();

    /**
     * Receives a tagged message whose tag matches {@code tag} under {@code mask} (mask -1: exact tag; 0: any tag).
     * Receives are matched in the order they were posted; a message that arrived earlier is taken at once. The
     * future's message is the caller's to release.
     */
    Future<TagMessage> tagRecv(long tag, long mask);

    /**
     * As {@link #tagRecv(long, long)}, writing the message into {@code into} (its writable bytes are the limit; a longer
     * message fails with {@code MessageTruncatedException}). The future's message content is a retained slice of
     * {@code into}.
     */
    Future<TagMessage> tagRecv(long tag, long mask, ByteBuf into);

    /**
     * Sets the handler of active messages sent to {@code id} (0 to 65535) on this worker's endpoints, replacing any
     * before; {@code null} removes it. Effective at once: a message arriving after this returns gets the new handler.
     * A message whose id has no handler is dropped with a counted warning (counter {@code am/dropped-no-handler}), as
     * UCX drops it; that includes messages arriving before a handler is set. A rendezvous sender is told, and its
     * future fails ({@code io.nucx.protocol.am.NoAmHandlerException}); an eager sender cannot tell.
     */
    void setAmHandler(int id, AmHandler handler);

    /**
     * Posts {@code receive}, typically a {@link TagReceive#reusable reusable} one: its handler gets the next message
     * matching its tag and mask, on this worker's loop, and may post it again right there for the one after. Called on
     * the loop, a receive posted and matched this way allocates nothing (with {@link Endpoint#write} of a
     * {@code ByteBuf} under {@link EndpointOption#SEND_TAG} on the sending side, neither side allocates per message);
     * from another thread the post is handed to the loop. Posted from a receive's handler, a receive is matched when
     * that handler returns, so a receive that reposts itself takes a backlog of waiting messages one handler call at a
     * time, not nested one call deep per message.
     *
     * @throws ReceivePostedAlreadyException on the loop, if {@code receive} is posted already;
     *         from another thread that second post is refused with a warning in the log: the first stands, and its
     *         handler's {@code failed} would say the receive is no longer posted, which it still is
     */
    void tagRecv(TagReceive receive);

    /**
     * Registers {@code segment} (native, of a shared or global arena) for remote access (UCX's {@code ucp_mem_map}
     * and {@code ucp_rkey_pack}) and returns its key, to give to peers (out of band, {@link RemoteMemoryKey#toHex()},
     * or in a message): they may {@link Endpoint#put} and {@link Endpoint#get} its bytes and run atomics
     * ({@link Endpoint#atomic}) on its aligned 8-byte words. It is registered with every RMA device of this worker
     * (each rdma port, cma), so a peer's endpoint uses the key of whichever device its lanes reach. Atomics without a
     * device for them run as active messages with the CPU's atomic instructions on this worker's loop. Keep the
     * segment alive until {@link #unregisterMemory}.
     *
     * @throws IllegalArgumentException for heap memory, an empty or thread-confined segment
     * @throws IllegalStateException    when a device refused the registration (the error named)
     */
    RemoteMemoryKey registerMemory(MemorySegment segment);

    /** {@link #registerMemory(MemorySegment)} for a direct buffer's bytes from 0 to its capacity. */
    default RemoteMemoryKey registerMemory(ByteBuffer direct) {
        if (!direct.isDirect()) {
            throw new IllegalArgumentException("only a direct buffer can be registered for remote access (a heap "
                    + "buffer's array moves)");
        }
        return registerMemory(MemorySegment.ofBuffer(direct.duplicate().clear()));
    }

    /**
     * Ends the region's registrations: rdma keys stop working at once, and atomics sent as active messages are
     * answered "no such region". A cma key cannot be taken back: {@code process_vm_readv}/{@code writev} need nothing
     * of this worker, so a peer holding the key can still read and write the region's addresses until this process
     * ends (as in UCX, where an rkey used after its memory is unmapped is undefined); keep the memory mapped, or stop
     * the peers using the key first, before giving it to something else.
     */
    void unregisterMemory(RemoteMemoryKey key);

    /** Completes when every endpoint's RMA written before it is complete ({@link Endpoint#flushRma()} on each). */
    Future<Void> flushRma();

    /** Fences every endpoint ({@link Endpoint#fenceRma()}): RMA written after waits for what came before. */
    Future<Void> fenceRma();

    /** How many messages each protocol carried (and lane events: failovers, resends). */
    ProtocolCounters counters();

    /** This worker's numbers for monitoring; bind {@link WorkerMetrics} to publish them with Micrometer. */
    WorkerStats stats();

    /** Why recent lanes were closed (malformed frames, protocol errors), oldest first, at most 16. */
    List<Throwable> laneFailures();

    /**
     * Why recent reads or writes of peers' memory failed (each message then went by RTR or as RNDV_DATA instead),
     * oldest first, at most 16.
     */
    List<Throwable> rmaFailures();

    /** Messages that arrived and wait for a receive. Loop only. */
    int unexpectedCount();

    /**
     * Receives whose buffer a peer may still be writing into although their endpoint ended (rendezvous PUT): held,
     * neither completed nor failed, until the peer's last word or its exit. Loop only.
     */
    int heldReceives();

    /**
     * The protocol table an endpoint to {@code remote} would use for tagged sends from {@code memory}, without
     * connecting or sending anything.
     */
    ProtoTable protocolTable(WorkerAddress remote, SelectionKey.MemoryType memory) throws Exception;

    /** The lanes and the protocol tables for heap and direct memory toward {@code remote}, as NUCX_PROTO_INFO prints. */
    String protocolInfo(WorkerAddress remote) throws Exception;

    /**
     * The lanes an endpoint to {@code remote} would use and why, without connecting: every candidate pair of
     * transports per criterion (AM, AM_BW, RMA, AMO) with its UCX score and verdict, then the chosen lanes. The peer
     * computes the same from the same two addresses.
     */
    String laneInfo(WorkerAddress remote, ErrorMode mode);

    /**
     * Closes every endpoint (gracefully), fails every posted receive, releases every message waiting for one, closes
     * the ifaces, and shuts down the event loop group if the worker made its own. Receives whose buffer a live peer
     * may still write into ({@link #heldReceives()}) are waited for up to NUCX_KEEPALIVE_TIMEOUT, then parked: never
     * completed, their buffers never released.
     */
    Future<Void> close();
}
