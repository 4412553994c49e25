package io.nucx.transport;

import io.netty.channel.ChannelHandlerContext;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The link from one handler's context to the one before it in its pipeline, which Netty's own walk follows and its API
 * does not expose. Netty's pipeline tells no one when a handler is added or removed, so a route that skips handlers
 * (a short frame handed from a lane's decoder to its last handler, a write that skips the endpoint's pipeline walk)
 * must look at what lies between on every use, and cheaply: through this link, read as Netty reads it (a volatile
 * read). If this Netty has no such field, {@link #previous} gives null and such routes are never taken.
 */
public final class PipelineLinks {

    /**
     * The most handlers a lane's short route looks at between its framing and its last handler (a lane's pipeline
     * holds none there but a test's probe): beyond, the route is not taken.
     */
    public static final int LANE_HANDLERS_LOOKED_AT = 4;

    /** {@code AbstractChannelHandlerContext.prev}, or null when this Netty has no such field to read. */
    private static final VarHandle PREV = previousLink();

    private PipelineLinks() {
    }

    private static VarHandle previousLink() {
        try {
            Class<?> context = Class.forName("io.netty.channel.AbstractChannelHandlerContext");
            return MethodHandles.privateLookupIn(context, MethodHandles.lookup()).findVarHandle(context, "prev",
                    context);
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
    }

    /**
     * True when no handler from {@code from} back to {@code stop} (that one not looked at) is a {@code kind}, and there
     * are at most {@code most} of them; false otherwise, and when the links cannot be read or do not lead to
     * {@code stop}.
     */
    public static boolean noneBetween(ChannelHandlerContext from, ChannelHandlerContext stop, Class<?> kind,
                                      int most) {
        ChannelHandlerContext c = from;
        for (int looked = 0; c != stop; looked++) {
            if (c == null || looked == most || kind.isInstance(c.handler())) {
                return false;
            }
            c = previous(c);
        }
        return true;
    }

    /**
     * The context before {@code ctx} in its pipeline (the head's, for the first handler's), or null when this Netty
     * has no such link to read.
     */
    public static ChannelHandlerContext previous(ChannelHandlerContext ctx) {
        return PREV == null ? null : (ChannelHandlerContext) PREV.getVolatile(ctx);
    }
}
