package io.nucx.transport;

import io.netty.buffer.ByteBuf;

/**
 * A lane's inbound handler that can say where a large payload belongs before it has arrived, so that a transport
 * reading a byte stream (tcp) reads it from the socket straight into that memory instead of into its own buffers
 * and copying (UCT's tcp receives a PUT_ZCOPY into its destination so). The frame then comes up the pipeline as
 * always, its payload being the buffer given here, filled.
 *
 * <p>Asked on the lane's loop, in stream order, once the frame's header has arrived and every frame before it has
 * gone up the pipeline; nothing of the payload has been handed to anyone yet.
 */
public interface PayloadPlacement {

    /**
     * Fired into a lane's pipeline before the memory it may be placing into goes back to its owner (an endpoint ending
     * fails the receives whose buffers those are): the lane moves a payload it is placing into a buffer of its own and
     * touches the placed memory no more. Synchronous: placing lanes read on their loop, one read at a time.
     */
    Object RELINQUISH = new Object() {
        @Override
        public String toString() {
            return "PayloadPlacement.RELINQUISH";
        }
    };

    /**
     * A buffer of exactly {@code length} writable bytes (writer index 0) for the payload of the frame {@code amId}
     * with {@code header} (read only, indices left alone), which the transport then owns and hands up as the frame's
     * payload (it releases it if the frame never completes); or null: the frame arrives the ordinary way. A buffer
     * with a memory address is written by the socket itself; any other is filled by copying.
     */
    ByteBuf placePayload(int amId, ByteBuf header, int length);
}
