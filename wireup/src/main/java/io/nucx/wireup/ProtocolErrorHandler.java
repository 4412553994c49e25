package io.nucx.wireup;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.socket.ChannelOutputShutdownException;
import io.nucx.EndpointException;
import io.nucx.protocol.am.AmSendRefusedException;
import io.nucx.protocol.am.NoAmHandlerException;
import io.nucx.protocol.tag.MessageTruncatedException;

import java.nio.channels.ClosedChannelException;

/**
 * Sits right above the protocol codecs: an exception a codec raised on a frame (a malformed header, an answer to a
 * request that does not exist) reaches it instead of the user's handlers, and closes the lane the frame came by,
 * naming the error, as a transport's decoder error would. Exceptions of the user's own handlers, further up, go on to
 * the tail as in any Netty pipeline.
 */
final class ProtocolErrorHandler extends ChannelInboundHandlerAdapter {

    private final EndpointChannel endpoint;

    ProtocolErrorHandler(EndpointChannel endpoint) {
        this.endpoint = endpoint;
    }

    @Override
    public boolean isSharable() {
        return false;
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        if (cause instanceof ClosedChannelException || cause instanceof ChannelOutputShutdownException
                || cause instanceof EndpointException || cause instanceof AmSendRefusedException
                || cause instanceof NoAmHandlerException || cause instanceof MessageTruncatedException) {
            // A user's write with the endpoint's void promise failed because the endpoint or its stream is ending or
            // has failed, or the send was refused (an active message's id or header here; at the peer, no handler
            // for it, or a receive too small for it): no frame is to blame. The user's handlers see it, as on any
            // Netty channel.
            ctx.fireExceptionCaught(cause);
            return;
        }
        endpoint.protocolError(cause);
    }
}
