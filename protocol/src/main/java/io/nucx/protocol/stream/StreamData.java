package io.nucx.protocol.stream;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.DefaultByteBufHolder;
import io.netty.buffer.Unpooled;

/**
 * A write to an endpoint's byte stream (UCX's {@code ucp_stream_send_nbx}): its bytes arrive at the peer's pipeline
 * after every byte written before it, as {@code ByteBuf}s. {@link #end()} is the end of the stream instead (the
 * output shut down): no byte may follow it. Whoever holds it releases it.
 */
public final class StreamData extends DefaultByteBufHolder {

    private final boolean end;

    public StreamData(ByteBuf content) {
        this(content, false);
    }

    private StreamData(ByteBuf content, boolean end) {
        super(content);
        this.end = end;
    }

    /** The end of this side's stream: the peer sees it after the last byte, as a {@code ChannelInputShutdownEvent}. */
    public static StreamData end() {
        return new StreamData(Unpooled.EMPTY_BUFFER, true);
    }

    /** Whether this is the end of the stream rather than bytes. */
    public boolean isEnd() {
        return end;
    }

    @Override
    public StreamData replace(ByteBuf content) {
        return new StreamData(content, end);
    }

    @Override
    public StreamData retain() {
        super.retain();
        return this;
    }

    @Override
    public StreamData touch(Object hint) {
        super.touch(hint);
        return this;
    }

    @Override
    public String toString() {
        return end ? "StreamData(end)" : "StreamData(" + content().readableBytes() + "B)";
    }
}
