package io.nucx.protocol;

import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelPromise;
import io.nucx.protocol.select.SelectionKey;
import io.nucx.transport.AmFrame;
import io.nucx.transport.Capability;
import io.nucx.transport.rma.RmaLane;

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

    /** The codec no longer needs the ended endpoint to linger ({@link ProtocolCodec#lingers()} turned false). */
    void lingerEnded();

    /** How long the endpoint waits for its peer when it closes (NUCX_KEEPALIVE_TIMEOUT): bounds a codec's last words. */
    long closeWaitNanos();

    /** A read or write of the peer's memory failed at run time and the data went another way; kept for diagnostics. */
    void rmaFailed(String what, Throwable cause);

    /**
     * This endpoint's receive budget: memory its peer's messages hold that no posted receive owns (unexpected
     * messages, messages still arriving for the unexpected queue or the pipeline, buffers offered for PUT). A codec
     * that would go over it throws {@link LimitExceededException}, which fails the endpoint.
     */
    MemoryBudget receiveBudget();

    /** The tag of plain {@code ByteBuf} writes ({@code SEND_TAG}). */
    long sendTag();

    /** Whether a tagged message no posted receive wants goes up this endpoint's pipeline ({@code PIPELINE_TAG}). */
    boolean deliversToPipeline(long tag);
}
