package io.nucx.transport;

import io.netty.buffer.ByteBuf;

/**
 * The payload of a short frame where the transport read it (shm: the ring), valid only during
 * {@link ShortFrameHandler#shortFrameArrived}: whoever takes the frame copies the bytes where they go, into the user's
 * buffer with no buffer of its own in between, or out into one to keep (UCT hands {@code am_short} data in place so).
 * A flyweight the transport reuses: not to be kept past the call.
 */
public interface ShortPayload {

    /** Its length in bytes. */
    int length();

    /** Copies the payload into {@code dst} at {@code index} (indices left alone; {@code dst} must have the room). */
    void copyTo(ByteBuf dst, int index);

    /** The payload copied into a pooled buffer of the transport's allocator, which the caller then owns. */
    ByteBuf copyOut();
}
