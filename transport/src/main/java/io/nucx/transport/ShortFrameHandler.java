package io.nucx.transport;

/**
 * A lane's inbound handler that takes a short frame as its parts: active message {@code amId}, no flags, a header that
 * is one little-endian long, and the payload where the transport read it ({@link ShortPayload}). A transport that
 * reads records out of its own memory (shm's ring) hands them so, with no header buffer and no {@link AmFrame} (UCT's
 * {@code am_short} on the receive side), when the handler is the lane's only one; tcp's frame decoder hands a whole
 * short frame where it lies in the read, when no inbound handler stands between the decoder and this one. Anything
 * it does not take comes up the pipeline as a frame, as always.
 */
public interface ShortFrameHandler {

    /**
     * Takes the short frame, copying {@code payload} where it goes before returning (it is valid during the call
     * only), and returns true; or returns false at once, having done nothing, and the transport sends the frame up
     * the pipeline. An exception closes the lane, as from {@code channelRead}.
     */
    boolean shortFrameArrived(int amId, long header, ShortPayload payload);

    /**
     * How many more frames, short or not, this handler takes in the current loop turn before it keeps the rest as
     * objects for the next turn (a lane's per-turn share). A transport that can leave frames where it read them stops
     * there, reads no more, and goes on in the next turn: tcp's decoder leaves them in its cumulation. Others need not
     * ask.
     */
    default int turnShareLeft() {
        return Integer.MAX_VALUE;
    }
}
