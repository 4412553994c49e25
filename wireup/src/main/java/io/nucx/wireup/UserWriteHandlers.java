package io.nucx.wireup;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandler;
import io.netty.channel.ChannelPipeline;
import io.nucx.transport.PipelineLinks;

/**
 * Whether a write issued on an endpoint would meet a handler of the user's before nucx's own: the question its routes
 * without the pipeline walk ({@code EndpointChannel#walkNotNeeded}) must answer per write, and cheaply. A pipeline
 * with only inbound handlers of the user's (a stream's reader: every endpoint whose byte stream is read has one) lets
 * a write go as if it had none, since Netty's own walk skips a handler that takes no writes.
 *
 * <p>Netty's pipeline tells no one when a handler is added or removed, and exposes no way from one handler's context
 * to the one before it; a cached answer could miss a handler added between two others (an upgrade's
 * {@code addAfter}). So the user's handlers are looked at on every write, back from the last to nucx's last, through
 * the link Netty's own walk follows ({@link PipelineLinks}). A pipeline of nucx's handlers and one reader costs one
 * step. If that link cannot be read (a Netty without the field), every write walks: the answer is then always "a
 * handler may take it", never a wrong "none".
 */
final class UserWriteHandlers {

    /** The most handlers of the user's looked at; beyond that the write walks (a long pipeline's walk is the rest). */
    static final int MOST_LOOKED_AT = 4;

    private UserWriteHandlers() {
    }

    /**
     * True only when every handler tail-side of {@code last} (nucx's last handler's context) takes no outbound
     * operation: not a {@link ChannelOutboundHandler} (a duplex handler counts as one even where it passes writes on,
     * which only costs it the shorter route). False also when there are more than {@link #MOST_LOOKED_AT} of them or
     * the link between contexts cannot be read.
     */
    static boolean noneTakeWrites(ChannelPipeline pipeline, ChannelHandlerContext last) {
        return PipelineLinks.noneBetween(pipeline.lastContext(), last, ChannelOutboundHandler.class, MOST_LOOKED_AT);
    }
}
