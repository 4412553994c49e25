package io.nucx.protocol.tag;

import io.netty.channel.Channel;

/** How the receive side answers the sender on the endpoint a message came from; the worker implements it. */
public interface TagReplies {

    /** Tell the sender to send {@code size} bytes as RNDV_DATA for {@code receiverReqId}. */
    void sendRtr(Channel endpoint, long senderReqId, long receiverReqId, long size);

    /** Tell the sender its send is over, with a status ({@link RndvHeaders#STATUS_OK} or truncated). */
    void sendAts(Channel endpoint, long senderReqId, int status);

    /** Tell a synchronous eager sender its message was matched ({@link RndvHeaders#STATUS_OK} or truncated). */
    void sendSyncAck(Channel endpoint, long senderReqId, int status);
}
