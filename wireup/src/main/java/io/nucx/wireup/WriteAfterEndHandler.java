package io.nucx.wireup;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;

/**
 * Sits tail-side of the protocol codecs: a write that reaches them after the endpoint ended (or a send after its
 * owner closed it) fails here, with why, as {@link EndpointChannel#write} fails one issued then ({@link
 * EndpointChannel#refuses}). That check runs where a write is issued; one issued off the loop reaches the pipeline
 * later, as a task, and a task queued just before the endpoint failed runs after the codecs aborted their requests: a
 * send registered then would wait for an answer nothing gives, with nothing left to end it.
 */
final class WriteAfterEndHandler extends ChannelOutboundHandlerAdapter {

    private final EndpointChannel endpoint;

    WriteAfterEndHandler(EndpointChannel endpoint) {
        this.endpoint = endpoint;
    }

    @Override
    public boolean isSharable() {
        return false;
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        if (endpoint.refuses(msg)) {
            endpoint.writeAfterEnd(msg, promise);
        } else {
            ctx.write(msg, promise);
        }
    }
}
