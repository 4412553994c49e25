package io.nucx.protocol;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.util.ReferenceCountUtil;

import java.util.ArrayList;
import java.util.List;

/**
 * Stands for the lanes below a codec: holds every write with its promise instead of passing it on, so a test decides
 * when and how each write completes. The test releases the messages ({@link #releaseAll}), as a lane would.
 */
public final class HoldWrites extends ChannelOutboundHandlerAdapter {

    public final List<Object> messages = new ArrayList<>();
    public final List<ChannelPromise> promises = new ArrayList<>();

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        messages.add(msg);
        promises.add(promise);
    }

    public void releaseAll() {
        messages.forEach(ReferenceCountUtil::release);
        messages.clear();
    }
}
