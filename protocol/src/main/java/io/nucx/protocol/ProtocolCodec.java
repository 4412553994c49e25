package io.nucx.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.util.concurrent.Future;
import io.nucx.transport.AmFrame;
import io.nucx.transport.ShortPayload;

import java.util.List;

/**
 * One protocol family's duplex handler in an endpoint's pipeline (tag eager, tag rendezvous, atomics): it turns the
 * family's outbound messages into frames, handles the frames of the active-message ids its family registered
 * ({@link ProtocolFamily#amIds()}), encodes its own replies, and owns its endpoint's requests of that family, each in
 * a stage. The endpoint's lifecycle drives it through the methods below, always on the endpoint's loop.
 */
public interface ProtocolCodec extends ChannelHandler {

    /**
     * The promise for a codec's own frames (replies, fragments before the last): when such a write fails the endpoint
     * is ending, which ends the requests concerned by itself. Unlike {@code ctx.voidPromise()} it raises no exception
     * in the endpoint's pipeline, where it would reach the user's handlers as theirs.
     */
    static ChannelPromise quietPromise(ChannelHandlerContext ctx) {
        return ctx.channel().unsafe().voidPromise();
    }

    /**
     * Whether it has work for the end of the current read batch (answers to flush, a batch to close). An endpoint whose
     * pipeline holds no handler of the user's skips the {@code channelReadComplete} pass when none of its codecs has:
     * a codec that acts on {@code channelReadComplete} must say here when it needs the call.
     */
    default boolean readCompletePending() {
        return false;
    }

    /**
     * Whether a short frame of {@code amId} (see {@link #shortFrameArrived}) may be handed over as its parts now; asked
     * before anything else is done with it, so false leaves the frame to come as one.
     */
    default boolean takesShortFrames(int amId) {
        return false;
    }

    /**
     * A short frame of {@code amId} as its parts (header one little-endian long, no flags), for which
     * {@link #takesShortFrames} said yes: as {@link #frameArrived} with no header buffer and no frame. The payload is
     * where the transport read it, valid during the call only: copied where it goes, or out; an exception closes the
     * lane.
     */
    default void shortFrameArrived(int amId, long header, ShortPayload payload) {
        throw new UnsupportedOperationException("short frames of " + amId);
    }

    /**
     * Where the {@code length}-byte payload of a frame of {@code amId} with {@code header} (read only) belongs, asked
     * by a lane that can read it straight there before it arrives ({@code PayloadPlacement}): a buffer of exactly
     * {@code length} writable bytes the caller then owns, whose bytes become the frame's payload when it arrives as
     * usual; or null (the default) for the ordinary way. Only a place the frame would be copied into anyway, and only
     * as far as the codec's state is sure of it now: the frame itself still goes through every check on arrival.
     */
    default ByteBuf placePayload(int amId, ByteBuf header, int length) {
        return null;
    }

    /**
     * A frame of one of its family's AM ids arrived, handed straight to the codec by its endpoint rather than walked up
     * the pipeline past the other families' codecs. Returns false, having done nothing, if it must come through the
     * pipeline ({@code channelRead}) after all. Owns {@code frame} when it returns true; an exception it throws closes
     * the lane, as from {@code channelRead}.
     */
    default boolean frameArrived(AmFrame frame) {
        return false;
    }

    /**
     * Adds what a graceful close waits for (bounded by the endpoint): requests whose outcome depends on the peer, such
     * as sends waiting for an acknowledgement or receive buffers the peer is writing into.
     */
    default void collectOutstanding(List<Future<?>> out) {
    }

    /**
     * The endpoint has ended with {@code cause} (a failure, or a close): every request is aborted as its stage says,
     * fails with {@code cause} and releases its buffers, unless its stage must outlive the endpoint (see
     * {@link #lingers()}). Called once, before the pipeline goes away.
     */
    void endpointEnded(Throwable cause);

    /**
     * Whether the ended endpoint must keep a lane open for this codec: it still expects the peer's last word on
     * something the peer may be writing into (rendezvous PUT), or its own last words are still being written. The
     * codec calls {@link EndpointServices#lingerEnded()} once that is over.
     */
    default boolean lingers() {
        return false;
    }

    /**
     * Whether the peer, not yet aware that the endpoint ended, may still send something this codec must answer: an
     * offer of its buffer (an RTR with a key) for a send whose RTS went out, which the peer would hold until our
     * process exits unless refused. The ended endpoint then keeps its lanes open until the peer's EP_REMOVED (at most
     * the close bound) and passes what arrives to {@link #lingerRead}. Asked after {@code endpointEnded}.
     */
    default boolean awaitsPeerEnd() {
        return false;
    }

    /** A frame that arrived while the endpoint lingers (its pipeline is gone). Owns {@code frame}. */
    default void lingerRead(AmFrame frame) {
        frame.release();
    }

    /**
     * The worker closes and stops waiting for this codec's lingering requests: they are parked for the life of the
     * JVM, never completed, their memory never released or reused. Returns how many.
     */
    default int park() {
        return 0;
    }

    /** Requests of this codec held past their endpoint's end (see {@link #lingers()}). */
    default int heldCount() {
        return 0;
    }

    /** Adds this codec's requests that wait on the peer, by kind; for diagnostics and tests. */
    default void describeRequests(List<String> out) {
    }
}
