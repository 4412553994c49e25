package io.nucx;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.util.concurrent.Future;
import io.nucx.protocol.amo.AtomicOp;
import io.nucx.protocol.amo.RemoteMemoryKey;
import io.nucx.protocol.tag.TagMessage;

import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * A UCP endpoint: a connection to one peer worker, as a Netty {@link Channel} multiplexed over the endpoint's lanes
 * (transport channels: tcp, shm, self...), as HTTP/2 streams are over a connection. Its pipeline is the endpoint's
 * protocol stack, and both directions pass through it: writes go down through the protocol codecs (tag eager, tag
 * rendezvous, atomics), which pick a protocol per message and encode it, to the lanes; arriving frames come up
 * through the same codecs, and tagged messages no posted receive wants reach the user's handlers at the tail as
 * {@link TagMessage}s ({@link EndpointOption#PIPELINE_TAG}), <b>in the order the peer wrote them</b>, whatever protocol
 * carried each.
 *
 * <pre>
 *   user handlers                                                   (tail)
 *   nucx.stream       the byte stream: writes up in order as ByteBufs; its receive window
 *   nucx.am           active messages to the worker's handlers
 *   nucx.tag.order    messages up in the peer's write order
 *   nucx.tag.eager    protocol selection; eager frames; eager arrivals
 *   nucx.tag.rndv     rendezvous: RTS, RTR, data by fragments, GET or PUT
 *   nucx.amo          atomics
 *   nucx.stub  ──(lanes ready)──▶  nucx.lanes: which lane a frame takes; failover's confirmations   (head)
 * </pre>
 * An endpoint is writable as soon as {@link Worker#connect} returns it: writes wait in the stub until wireup has
 * chosen and connected its lanes, then replay in order.
 *
 * <p><b>Failure</b> (error mode {@link ErrorMode#PEER}, the default): the peer's connection closing, an EP_REMOVED from
 * the peer, or NUCX_KEEPALIVE_TIMEOUT of silence fails the endpoint once: every operation outstanding or queued on it
 * fails with an {@link EndpointException} naming the peer and the reason ({@link ConnectionResetException},
 * {@link EndpointTimeoutException}) and its buffers are released; then an {@link EndpointErrorEvent} goes through the
 * pipeline ({@code userEventTriggered}), {@link #errorFuture()} fails with the same cause, and the endpoint closes.
 * Posted receives belong to the worker and stay. The worker and its other endpoints go on.
 *
 * <p><b>Close</b> ({@link #close()}) is graceful: writes still queued go out first, sends waiting for the peer
 * (rendezvous, synchronous, zero-copy, atomics) get at most NUCX_KEEPALIVE_TIMEOUT, then the peer is told
 * (EP_REMOVED, behind everything written) and its endpoint fails with {@link ConnectionResetException} ("closed by its
 * owner").
 */
public interface Endpoint extends Channel {

    /** The worker this endpoint belongs to. */
    Worker worker();

    /** This endpoint's id within its worker (UCX's ep id). */
    long endpointId();

    /** The peer's worker address. */
    WorkerAddress remoteWorkerAddress();

    /** This endpoint's error handling: {@link ErrorMode#PEER} and {@link ErrorMode#FAILOVER} run keepalive on it. */
    ErrorMode errorMode();

    /**
     * Completes when the endpoint is wired up both ways (the peer's REPLY arrived, or its REQUEST paired with ours; with
     * a p2p lane, when that lane is up). Fails if the endpoint fails first.
     */
    Future<Void> wireupFuture();

    /**
     * Completes when the endpoint ends: failed with the {@link EndpointException} that ended it (the same cause every
     * outstanding operation got), or succeeded when it was closed here without failure.
     */
    Future<Void> errorFuture();

    /**
     * Writes {@code data} to this endpoint's byte stream (UCX's {@code ucp_stream_send_nbx}): the peer's pipeline
     * receives it as plain {@code ByteBuf}s after every byte written before it, whatever protocol carries each write
     * (eager, or rendezvous with zero-copy where the cost model says so), and never through tag matching. The peer's
     * {@code read()} (auto-read) paces the stream: a peer that stops reading stops this side after its receive window
     * (the future then waits, and {@link #isWritable()} turns false). The future completes when the buffer may be
     * reused. Owns {@code data}. A handler in the pipeline writes {@link io.nucx.protocol.stream.StreamData} for the
     * same, and {@link io.nucx.protocol.stream.StreamData#end()} to end the stream ({@code ChannelInputShutdownEvent}
     * at the peer).
     */
    ChannelFuture streamSend(ByteBuf data);

    /**
     * Sends an active message to the peer worker's handler for {@code id} ({@link Worker#setAmHandler}; UCX's
     * {@code ucp_am_send_nbx}): {@code header} (at most 4096 bytes) reaches the handler with the message, {@code data}
     * eagerly or, above the rendezvous threshold the protocol table sets, by rendezvous (the handler receives it into a
     * buffer of its own, {@link AmMessage#receiveData}); a header the rendezvous RTS cannot hold on the AM lane (its
     * frame size, header included) goes eagerly instead, or fails the send, saying so, where NUCX_PROTOS leaves out
     * {@code egr/multi/bcopy}. Messages of one endpoint reach the peer's handlers in the
     * order they were sent. The future completes when the buffers may be reused; it fails with
     * {@link IllegalArgumentException} naming the limit for an id outside 0 to 65535 or a header over 4096 bytes
     * (nothing is sent). Owns {@code header} and {@code data}.
     *
     * @param reply the handler gets the peer's endpoint to this one as its {@link AmMessage#replyEndpoint()}
     */
    ChannelFuture amSend(int id, ByteBuf header, ByteBuf data, boolean reply);

    /**
     * Sends an active message now if its user header and data go as one eager short message the transport takes at
     * once (UCT's {@code am_short}; UCX's {@code ucp_am_send_nbx} completing inline, with no request): true, the bytes
     * copied into the transport, and both buffers are still the caller's, indices and reference counts untouched, so
     * the same buffers can be sent again and again with no object per message. False when they cannot go that way now,
     * as for {@link #trySendShort} (and when a header and its data come to more than 8 KiB together): nothing was
     * sent, and {@link #amSend(int, ByteBuf, ByteBuf, boolean)} sends it. The peer sees it after the endpoint's next
     * flush, in order with the endpoint's other writes.
     *
     * @param reply the handler gets the peer's endpoint to this one as its {@link AmMessage#replyEndpoint()}
     * @throws IllegalArgumentException for an id outside 0 to 65535 or a header over 4096 bytes, naming the limit
     */
    boolean tryAmSendShort(int id, ByteBuf header, ByteBuf data, boolean reply);

    /** {@link #amSend(int, ByteBuf, ByteBuf, boolean)} without a reply endpoint. */
    default ChannelFuture amSend(int id, ByteBuf header, ByteBuf data) {
        return amSend(id, header, data, false);
    }

    /** Sends a tagged message; the future completes when the buffer may be reused. Owns {@code data}. */
    ChannelFuture tagSend(long tag, ByteBuf data);

    /**
     * Sends {@code data}'s readable bytes with {@code tag} now if they go as an eager short message the transport takes
     * at once (UCT's {@code am_short}; UCX's {@code ucp_tag_send_nbx} completing inline, with no request): true, the
     * bytes copied into the transport, and {@code data} is still the caller's, its indices and reference count
     * untouched, so one buffer can be sent again and again with no per-message object or atomic reference count. False
     * when they cannot go that way now (over the short protocol's size, a transport that would queue or is full,
     * writes queued ahead, a handler of the user's that takes writes, not wired up yet, ended, or not on the endpoint's
     * event loop): nothing was sent, and an ordinary {@link #tagSend} or write sends it. The peer sees it after the
     * endpoint's next flush, in order with the endpoint's other writes.
     */
    boolean trySendShort(long tag, ByteBuf data);

    /**
     * Writes {@code data}'s readable bytes (one or more) to the endpoint's byte stream now if they go as one eager
     * short message the transport takes at once (UCX's {@code ucp_stream_send_nbx} completing inline): true, the bytes
     * copied into the transport and their stream credit spent, and {@code data} is still the caller's, untouched, as
     * with {@link #trySendShort}. False when a {@code StreamData} write would not send them at once (writes waiting for
     * the peer's credit, the stream's end written) or for {@link #trySendShort}'s reasons; a handler of the user's
     * that takes no writes (the stream's reader) is no reason: nothing was sent, and a {@code StreamData} write sends
     * them, in order. The peer reads them as it reads every stream write.
     */
    boolean trySendStreamShort(ByteBuf data);

    /**
     * Sends a tagged message whose future completes only once the receiver has matched it (UCX's
     * {@code ucp_tag_send_sync_nbx}): eager with an acknowledgement or rendezvous, as the protocol table says.
     */
    ChannelFuture tagSendSync(long tag, ByteBuf data);

    /**
     * Runs {@code op} with {@code value} on the 8-byte word at {@code address} of the peer's memory registered as
     * {@code key} ({@link Worker#registerMemory} there); the future gets the word's previous value once the peer
     * applied it. For {@link AtomicOp#CSWAP} use {@link #compareAndSwap}. Fails with
     * {@link io.nucx.protocol.amo.RemoteAccessException} if the peer refuses (no such region, outside it,
     * misaligned), or with the endpoint's failure.
     */
    Future<Long> atomic(AtomicOp op, RemoteMemoryKey key, long address, long value);

    /** Sets the word at {@code address} to {@code value} if it holds {@code expected}; the future gets what it held. */
    Future<Long> compareAndSwap(RemoteMemoryKey key, long address, long expected, long value);

    /**
     * Writes {@code local} to {@code remoteAddress} of the peer's memory registered as {@code key}
     * ({@link Worker#registerMemory} there; UCX's {@code ucp_put_nbx}) through this endpoint's RMA lanes (cma on one
     * host, rdma; a large write is split over several rails in proportion to bandwidth). The future completes when
     * the bytes are at the peer, and fails, naming why, for a key another worker registered, bytes outside its region,
     * no RMA lane to this peer (and why not), or the endpoint's failure. Keep {@code local} alive and unchanged until
     * then. Operations written while the endpoint wires up wait for it.
     */
    Future<Void> put(MemorySegment local, RemoteMemoryKey key, long remoteAddress);

    /**
     * Reads {@code local.byteSize()} bytes at {@code remoteAddress} of the peer's memory registered as {@code key}
     * into {@code local} (UCX's {@code ucp_get_nbx}); as {@link #put}, the future completes when they are there.
     */
    Future<Void> get(MemorySegment local, RemoteMemoryKey key, long remoteAddress);

    /**
     * Completes when every {@link #put}, {@link #get} and atomic written on this endpoint before it is complete (UCX's
     * {@code ucp_ep_flush_nbx}: a put's bytes are at the peer); fails with the first of them that failed.
     */
    Future<Void> flushRma();

    /**
     * Orders this endpoint's RMA: puts and gets written after the fence start only once those before it are complete
     * (UCX's {@code ucp_ep_fence}). The future completes when the fence is in place.
     */
    Future<Void> fenceRma();

    /** "transport/device" of each message lane in use (the AM lane first); failed lanes are left out. */
    Future<List<String>> laneNames();

    /**
     * Takes message lane {@code index} down (0 is the lane carrying active messages now; AM_BW lanes follow), e.g. to
     * drain a device. In error mode failover the endpoint goes on over the others, or a replacement; otherwise losing a
     * lane fails the endpoint. The future completes when the lane is closed.
     */
    Future<Void> closeLane(int index);

    /**
     * The lanes chosen for this endpoint, for logs and tools: "shm/memory + tcp/lo (p2p); rma cma/memory; keepalive
     * shm/memory", or with "no rma lane: why".
     */
    String describeLanes();

    /**
     * "cma/memory" when this endpoint may read and write the peer's memory (rendezvous GET and PUT), else null; with
     * several RMA lanes (multi-rail) all of them, "rdma/mlx5_0:1 + rdma/mlx5_1:1".
     */
    String rmaLane();

    /**
     * Why this endpoint has no RMA lane although the peer offered one (the kernel refused: EPERM; another host), or
     * null. Rendezvous then moves the data as active-message fragments ({@code tag/rndv}).
     */
    String rmaRefusal();
}
