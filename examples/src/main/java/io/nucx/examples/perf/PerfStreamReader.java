package io.nucx.examples.perf;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;

/**
 * stream_lat / stream_bw: the reader in every endpoint's pipeline of a perftest worker (connected or accepted: which
 * endpoint the peer's writes come up is the wireup's business), counting the stream's bytes and calling the test
 * once per message's worth, as ucx_perftest's {@code ucp_stream_recv_nb} takes one message's length at a time. The
 * bytes are released at once: they are counted, not kept. Loop only (one worker, one loop).
 */
@ChannelHandler.Sharable
final class PerfStreamReader extends ChannelInboundHandlerAdapter {

    private final int messageSize;
    private final boolean pingPong;
    private Runnable onMessage = () -> { };
    private long pending;

    /** @param pingPong stream_lat: each message's worth is answered with as many bytes */
    PerfStreamReader(int messageSize, boolean pingPong) {
        if (messageSize < 1) {
            throw new IllegalArgumentException("a stream message has at least 1 byte, got " + messageSize);
        }
        this.messageSize = messageSize;
        this.pingPong = pingPong;
    }

    int messageSize() {
        return messageSize;
    }

    boolean pingPong() {
        return pingPong;
    }

    /** Called for every {@code messageSize} bytes read from here on. */
    void onMessage(Runnable onMessage) {
        this.onMessage = onMessage;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof ByteBuf data)) {
            ctx.fireChannelRead(msg);
            return;
        }
        pending += data.readableBytes();
        data.release();
        while (pending >= messageSize) {
            pending -= messageSize;
            onMessage.run();
        }
    }
}
