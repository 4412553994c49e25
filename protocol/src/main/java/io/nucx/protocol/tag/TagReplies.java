package io.nucx.protocol.tag;

import io.netty.channel.Channel;
import io.nucx.transport.rma.RmaLane;

/** How the receive side answers the sender on the endpoint a message came from; the worker implements it. */
public interface TagReplies {

    /** Tell the sender to send {@code size} bytes as RNDV_DATA for {@code receiverReqId}. */
    void sendRtr(Channel endpoint, long senderReqId, long receiverReqId, long size);

    /**
     * Tell the sender to write {@code size} bytes into the receive buffer whose packed remote key is {@code packedKey}
     * and then send RNDV_ATP ({@code rndv/put/zcopy}); it may send RNDV_DATA instead.
     */
    default void sendRtr(Channel endpoint, long senderReqId, long receiverReqId, long size, byte[] packedKey) {
        throw new UnsupportedOperationException("rndv/put/zcopy is not enabled here");
    }

    /** Tell the sender its send is over, with a status ({@link RndvHeaders#STATUS_OK} or truncated). */
    void sendAts(Channel endpoint, long senderReqId, int status);

    /** Tell a synchronous eager sender its message was matched ({@link RndvHeaders#STATUS_OK} or truncated). */
    void sendSyncAck(Channel endpoint, long senderReqId, int status);

    /**
     * Tell a zero-copy eager sender its whole message arrived. A worker that sends none of these replies may leave
     * this out: a zero-copy message is then a protocol error (that lane closes).
     */
    default void sendZcopyAck(Channel endpoint, long senderReqId) {
        throw new io.nucx.protocol.ProtocolException("zero-copy message (sender request " + senderReqId + ") from "
                + endpoint + ", but no acknowledgement can be sent here");
    }

    /**
     * The lane that reads a sender's memory for {@code rndv/get/zcopy} on this endpoint: its RMA lane when lane
     * selection chose one the transport permits, else null (the data is then asked for by RTR).
     */
    default RmaLane rndvGetLane(Channel endpoint) {
        return null;
    }

    /** A read of the sender's memory failed at run time; the data is asked for by RTR instead. For diagnostics. */
    default void rndvGetFailed(Channel endpoint, Throwable cause) {
    }

    /**
     * The lane the peer would write into our memory through for {@code rndv/put/zcopy} on this endpoint: its RMA lane
     * when it is permitted and active and has PUT_ZCOPY on both sides, else null (the receiver then sends a plain RTR).
     * The receiver registers the offered buffer with it; revoking that registration is one way a held buffer ends.
     */
    default RmaLane rndvPutLane(Channel endpoint) {
        return null;
    }

    /**
     * No receive buffer offered to {@code endpoint}'s peer for PUT is outstanding any more. An endpoint that ended
     * while some were (and kept its lane open to hear the sender's last word) may now close its lane.
     */
    default void rndvPutReleased(Channel endpoint) {
    }
}
