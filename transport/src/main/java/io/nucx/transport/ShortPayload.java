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

    /**
     * Copies {@code length} bytes of the payload from {@code from} into {@code dst} at {@code index} (indices left
     * alone; {@code dst} must have the room): a part of it, such as an active message's data after its user header.
     *
     * @throws IndexOutOfBoundsException when the part is not inside the payload
     */
    void copyTo(int from, int length, ByteBuf dst, int index);

    /** The payload copied into a pooled buffer of the transport's allocator, which the caller then owns. */
    default ByteBuf copyOut() {
        return copyOut(0, length());
    }

    /**
     * {@code length} bytes of the payload from {@code from} copied into a pooled buffer of the transport's allocator
     * (an empty unpooled one for none), which the caller then owns.
     *
     * @throws IndexOutOfBoundsException when the part is not inside the payload
     */
    ByteBuf copyOut(int from, int length);
}
