package io.nucx.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.util.concurrent.Future;
import io.nucx.protocol.select.SelectionKey;
import io.nucx.transport.AmFrame;
import io.nucx.transport.Capability;
import io.nucx.transport.rma.RmaLane;

import java.util.List;

/**
 * What an endpoint gives its protocol codecs beyond their {@code ChannelHandlerContext}: its lane configuration, its
 * RMA lane, and the hooks of its lifecycle. The wireup layer implements it; nothing here says how lanes were chosen.
 * Loop only.
 */
public interface EndpointServices {

    /** The lanes as the protocols see them (the AM lane's limits, AM_BW lanes, the RMA lane's attributes). */
    EndpointConfig endpointConfig();

    /** The uuid of the peer's worker. */
    long peerUuid();

    /** Where the peer is (this process, this host, elsewhere): part of every selection key of the endpoint. */
    SelectionKey.Locality locality();

    /**
     * The endpoint's RMA lane when lane selection chose one the kernel permits and both sides' entries have
     * {@code capability}, connected on first use; null otherwise, and null once the endpoint has ended.
     */
    RmaLane rmaLane(Capability capability);

    /**
     * The endpoint's connected RMA lanes whose entries on both sides have {@code capability}, best first (UCX's RMA_BW
     * lanes: a large transfer is split over them in proportion to {@link RmaRail#bandwidth()}); empty when there is
     * none, and once the endpoint has ended. By default the one {@link #rmaLane} as the only rail.
     */
    default List<RmaRail> rmaRails(Capability capability) {
        RmaLane lane = rmaLane(capability);
        return lane == null ? List.of() : List.of(new RmaRail(lane, 0, 0, 1, "rma"));
    }

    /**
     * The devices of this side's RMA lanes with {@code capability} on both entries, as memory domains, whether or not
     * the lanes are connected yet: memory registered there is reached by the peer's lanes (the key of a rendezvous GET
     * offer can go out while the endpoint still wires up). Empty by default: offers then register on the connected
     * {@link #rmaRails}.
     */
    default List<MemoryDomain> memoryDomains(Capability capability) {
        return List.of();
    }

    /** Whether lane selection chose an AMO lane for this endpoint (connected or not yet): atomics wait for it. */
    default boolean hasAmoLane() {
        return false;
    }

    /**
     * The lane for device atomics (UCX's AMO lane: ATOMIC64 on both sides), connected; null when there is none (atomics
     * then go as active messages, {@code amo/am}).
     */
    default RmaRail amoRail() {
        return null;
    }

    /**
     * Why this endpoint has no RMA lane for {@code capability}, in words for an error: no transport with it on both
     * sides (naming the lanes there are), the kernel refused, another host. Null when it has one.
     */
    default String noRmaLaneReason(Capability capability) {
        return rmaRails(capability).isEmpty() ? "no RMA lane with " + capability + " to this peer" : null;
    }

    /**
     * Completes when the endpoint is wired up (its lanes connected both ways); null when it was from the start.
     * Operations that need the lanes (the RMA API) wait for it.
     */
    default Future<Void> wireupFuture() {
        return null;
    }

    /**
     * Whether receive buffers may still be offered to the peer for PUT: not once the endpoint closes, because the
     * peer may have ended its sends already and an offer nobody answers holds its buffer until the peer's exit.
     */
    boolean acceptsOffers();

    /**
     * Writes and flushes {@code frame} straight onto a live lane, below the pipeline: the last words of a codec whose
     * endpoint lingers. The future fails when no lane is left.
     */
    ChannelFuture writeDirect(AmFrame frame);

    /**
     * Writes {@code frame} onto its lane now, as the lane dispatcher at the head of the pipeline would, without passing
     * the handlers in between (other families' codecs, which pass frames on untouched): a message's frames then cost
     * one call instead of a pipeline walk. Returns false, having done nothing, when the frame must go down the pipeline
     * instead (the endpoint is still wiring up, so its writes queue in order, or it has ended).
     */
    default boolean writeToLane(AmFrame frame, ChannelPromise promise) {
        return false;
    }

    /**
     * Flushes the lanes now, as the lane dispatcher at the head of the pipeline would ({@link #writeToLane}'s flush).
     * Returns false, having done nothing, when the flush must go down the pipeline instead.
     */
    default boolean flushLanes() {
        return false;
    }

    /** A codec's frame: straight onto its lane when it may go there ({@link #writeToLane}), else down {@code ctx}. */
    default void writeFrame(ChannelHandlerContext ctx, AmFrame frame, ChannelPromise promise) {
        if (!writeToLane(frame, promise)) {
            ctx.write(frame, promise);
        }
    }

    /** A codec's flush: the lanes' own when they may be flushed directly ({@link #flushLanes}), else down ctx. */
    default void flushFrames(ChannelHandlerContext ctx) {
        if (!flushLanes()) {
            ctx.flush();
        }
    }

    /** {@link #writeFrame}, then {@link #flushFrames}: a codec's reply, out at once. */
    default void writeAndFlushFrame(ChannelHandlerContext ctx, AmFrame frame, ChannelPromise promise) {
        writeFrame(ctx, frame, promise);
        flushFrames(ctx);
    }

    /**
     * As {@link #writeToLane}, for a frame of active message {@code amId} whose header is the 8 bytes of {@code header}
     * (little-endian) and whose payload is {@code payload}'s readable bytes: copied into the AM lane's transport at
     * once when it can take them so (UCT's {@code am_short}: shm's ring), with no header buffer and no frame, and
     * {@code promise} completed. Returns false, having done nothing, otherwise. The caller keeps {@code payload}.
     */
    default boolean writeShortToLane(int amId, long header, ByteBuf payload, ChannelPromise promise) {
        return false;
    }

    /** The codec no longer needs the ended endpoint to linger ({@link ProtocolCodec#lingers()} turned false). */
    void lingerEnded();

    /** How long the endpoint waits for its peer when it closes (NUCX_KEEPALIVE_TIMEOUT): bounds a codec's last words. */
    long closeWaitNanos();

    /** A read or write of the peer's memory failed at run time and the data went another way; kept for diagnostics. */
    void rmaFailed(String what, Throwable cause);

    /**
     * This endpoint's receive budget: memory its peer's messages hold that no posted receive owns (unexpected
     * messages, messages still arriving for the unexpected queue or the pipeline, buffers offered for PUT), and whole
     * buffers taken for a rendezvous message before its data come (tried, never failing the endpoint). A codec
     * that would go over it throws {@link LimitExceededException}, which fails the endpoint.
     */
    MemoryBudget receiveBudget();

    /** The tag of plain {@code ByteBuf} writes ({@code SEND_TAG}). */
    long sendTag();

    /** Whether a tagged message no posted receive wants goes up this endpoint's pipeline ({@code PIPELINE_TAG}). */
    boolean deliversToPipeline(long tag);
}
