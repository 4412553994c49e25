package io.nucx.transport;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandler;

/**
 * A lane's outbound framing handler that writes a short frame given as its parts: active message {@code amId}, no
 * flags, a header that is one little-endian long, and the payload, copied at once (UCT's {@code am_short} on the send
 * side), with no {@link AmFrame}, header buffer or promise. The side of a lane that is a Netty channel of its own (tcp)
 * has no {@link AbstractLaneChannel#writeShortNow}; its framing handler does this instead, into the same outbound
 * buffer as its frames, so the two keep their order.
 */
public interface ShortFrameWriter extends ChannelOutboundHandler {

    /**
     * Writes the short frame from this handler's context {@code ctx} (to the handlers before it: TLS, the socket),
     * copying {@code payload}, which stays the caller's, untouched: true. False, having done nothing, when the frame
     * does not fit the lane's limits. On the lane's loop; not flushed: the frame may wait in the writer until the next
     * flush or the next write through it, and goes out before that write.
     */
    boolean writeShort(ChannelHandlerContext ctx, int amId, long header, ByteBuf payload);

    /**
     * The context of {@code lane}'s short frame writer when a short frame may be written there now: the lane is
     * active and writable (a lane that is not takes the ordinary way, which waits for room), and no outbound handler
     * stands between the pipeline's end and the writer, which a write from its context would pass by. Else null.
     * {@code writer} is the lane's writer's context as found before ({@link #find}), or null.
     */
    static ChannelHandlerContext ready(Channel lane, ChannelHandlerContext writer) {
        if (writer == null || writer.isRemoved() || !lane.isActive() || !lane.isWritable()) {
            return null;
        }
        return PipelineLinks.noneBetween(lane.pipeline().lastContext(), writer, ChannelOutboundHandler.class,
                PipelineLinks.LANE_HANDLERS_LOOKED_AT) ? writer : null;
    }

    /** The context of {@code lane}'s short frame writer, or null when its pipeline holds none. */
    static ChannelHandlerContext find(Channel lane) {
        return lane.pipeline().context(ShortFrameWriter.class);
    }
}
