package io.nucx.transport;

import io.netty.buffer.ByteBuf;
import io.netty.channel.AbstractChannel;
import io.netty.channel.ChannelConfig;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelMetadata;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.ChannelOutboundHandler;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.ChannelPromise;
import io.netty.channel.DefaultChannelConfig;
import io.netty.channel.EventLoop;

import java.net.SocketAddress;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.NotYetConnectedException;

/**
 * What nucx's own lane channels share (self, shm, cma; tcp lanes are Netty's socket channels): made connected by their
 * iface (never bound, never connected through the channel), an explicit {@link State}, addresses fixed at connect,
 * frames weighed by their bytes toward the water mark, and a way to resume writing from the loop.
 */
public abstract class AbstractLaneChannel extends AbstractChannel {

    /** OPEN: made, not yet paired with its peer; CONNECTED: carries writes; CLOSED: for good. */
    protected enum State { OPEN, CONNECTED, CLOSED }

    private static final ChannelMetadata METADATA = new ChannelMetadata(false);

    private final ChannelConfig config = new DefaultChannelConfig(this);
    private final SocketAddress localAddress;
    private final IfaceAttributes limits;
    private volatile SocketAddress remoteAddress;
    private volatile State state;

    /**
     * @param limits the iface's attributes, whose frame limits writes are checked against
     *               ({@link IfaceAttributes#checkFrame}); null for a lane that carries no frames
     */
    protected AbstractLaneChannel(SocketAddress localAddress, SocketAddress remoteAddress, State initial,
                                  IfaceAttributes limits) {
        super(null);
        this.limits = limits;
        // Frames weigh their bytes toward the water mark (Netty's default estimator counts unknown types as 8).
        config.setMessageSizeEstimator(AmFrameSizeEstimator.INSTANCE);
        this.localAddress = localAddress;
        this.remoteAddress = remoteAddress;
        this.state = initial;
    }

    protected final State state() {
        return state;
    }

    /** The lane is connected from now on, to {@code remote} if given. */
    protected final void connected(SocketAddress remote) {
        if (remote != null) {
            remoteAddress = remote;
        }
        state = State.CONNECTED;
    }

    /**
     * Takes {@link AmFrame}s within the iface's limits; a larger frame fails its write with the
     * {@link io.netty.handler.codec.TooLongFrameException} naming both, which the pipeline hears of too
     * ({@code exceptionCaught}, as tcp's encoder reports it): Netty drops a void promise's failure here, and the
     * frame's writer would never learn it was lost. Anything else is refused.
     */
    @Override
    protected Object filterOutboundMessage(Object msg) {
        if (msg instanceof AmFrame f && limits != null) {
            try {
                limits.checkFrame(f, this);
            } catch (RuntimeException tooLong) {
                pipeline().fireExceptionCaught(tooLong);
                throw tooLong;
            }
            return msg;
        }
        throw new UnsupportedOperationException(getClass().getSimpleName() + " carries "
                + (limits != null ? "AmFrames" : "no frames") + ", not " + msg.getClass().getName());
    }

    /**
     * Writes {@code frame} into the transport at once, below the pipeline, when that is exactly what a write would do:
     * on the loop, connected, nothing queued ahead of it (order), no outbound handler in this lane's pipeline to see
     * it, and within the iface's limits. A small message then costs no pipeline pass and no outbound-buffer entry
     * (UCT's {@code am_short}: the send is done when it returns, its buffer free). As with any write, the peer sees it
     * after the next flush ({@link #flushNow}, or the channel's): shm publishes its ring's tail once per flush (and a
     * large record at once: a reader need not wait for a big message's last fragment). False,
     * {@code frame} untouched, when it cannot (including a full transport): the caller writes it the ordinary way.
     * Takes {@code frame} when true.
     */
    public final boolean writeNow(AmFrame frame) {
        if (!mayWriteNow(frame.header().readableBytes(), frame.length()) || !writeNow0(frame)) {
            return false;
        }
        frame.release();
        return true;
    }

    /**
     * As {@link #writeNow}, for a frame of active message {@code amId} (no flags) whose header is the 8 bytes of
     * {@code header} (little-endian) and whose payload is {@code payload}'s readable bytes, copied: UCT's
     * {@code am_short}, with no header buffer and no frame. The caller keeps {@code payload} either way.
     */
    public final boolean writeShortNow(int amId, long header, ByteBuf payload) {
        return writesShortRecords() && mayWriteNow(Long.BYTES, Long.BYTES + payload.readableBytes())
                && writeShortNow0(amId, header, payload);
    }

    /**
     * Whether this transport has a {@link #writeShortNow0}: one without (cma) is asked nothing else, since a sender
     * that tries a short write first (every stream write) would otherwise pay the checks for each refusal.
     */
    public boolean writesShortRecords() {
        return false;
    }

    private boolean mayWriteNow(int headerLength, int length) {
        return state == State.CONNECTED && limits != null && limits.fits(headerLength, length) && isRegistered()
                && eventLoop().inEventLoop() && nothingQueued();
    }

    /**
     * What a flush would do, done without the pipeline pass when nothing is queued and no outbound handler could hold
     * anything: the transport publishes what {@link #writeNow} put in ({@link #publishNow}). False, having done
     * nothing, when a flush must go the ordinary way. Loop only.
     */
    public final boolean flushNow() {
        if (!nothingQueued()) {
            return false;
        }
        if (state == State.CONNECTED) {
            publishNow();
        }
        return true;
    }

    /**
     * Makes what {@link #writeNow0}/{@link #writeShortNow0} wrote visible to the peer. A transport may hold immediate
     * writes until the flush that follows them, as Netty holds written messages until a flush (shm publishes its ring's
     * tail once per batch); one that writes through has nothing to do. Called by every flush, on the loop.
     */
    protected void publishNow() {
    }

    /**
     * What the transport below holds in each direction, for an error that must say where a conversation stopped (a
     * keepalive timeout: did the peer fall silent, or did this side stop reading what it sent?); empty when it holds
     * nothing of its own beyond Netty's outbound buffer. Loop only.
     */
    public String transportState() {
        return "";
    }

    /**
     * Whether frames of the peer's wait in the transport for a read this side has asked for: its loop has not got to
     * them yet (busy with tasks), but the peer spoke. Keepalive counts them as heard, so a loop kept from its I/O
     * does not take its peer for silent ({@link LaneBacklog} asks a socket's kernel). False where it cannot tell.
     * Loop only.
     */
    public boolean peerFramesWaiting() {
        return false;
    }

    /** The pipeline holds no outbound handler (a lane's usually holds one inbound handler, or none). */
    private boolean noOutboundHandler() {
        ChannelPipeline p = pipeline();
        ChannelHandler first = p.first();
        if (first == null) {
            return true;
        }
        // One handler: a look at it. More (a test's probe, a future codec): the full search.
        return first == p.last() ? !(first instanceof ChannelOutboundHandler)
                : p.context(ChannelOutboundHandler.class) == null;
    }

    /** The transport's {@link #writeShortNow}: true if the record went. */
    protected boolean writeShortNow0(int amId, long header, ByteBuf payload) {
        return false;
    }

    /**
     * A short frame that arrived as its parts (shm's ring record, self's in-place record), offered to the lane's only
     * handler when it is a {@link ShortFrameHandler}: true when it was taken (a throw is reported as one from
     * {@code channelRead}, and the frame is gone); false, and the transport sends it up the pipeline as a frame.
     */
    protected final boolean shortFrameTaken(int amId, long header, ShortPayload payload) {
        ChannelPipeline p = pipeline();
        if (!(p.last() instanceof ShortFrameHandler s) || p.first() != s) {
            return false;
        }
        try {
            return s.shortFrameArrived(amId, header, payload);
        } catch (Throwable t) {
            p.fireExceptionCaught(t); // as a throw from channelRead
            return true;
        }
    }

    /** Nothing queued, and no outbound handler that could hold anything. Loop only. */
    protected final boolean nothingQueued() {
        ChannelOutboundBuffer queued = unsafe().outboundBuffer();
        return queued != null && queued.totalPendingWriteBytes() == 0 && queued.current() == null
                && noOutboundHandler();
    }

    /**
     * Fails every write still flushed or queued with {@code cause}, then closes: for writes whose next turn its loop
     * will never run (it shut down and cancelled the timer they waited for). Loop only.
     */
    protected final void failWritesAndClose(Throwable cause) {
        ChannelOutboundBuffer in = unsafe().outboundBuffer();
        if (in != null) {
            while (in.current() != null) {
                in.remove(cause);
            }
        }
        unsafe().close(unsafe().voidPromise());
    }

    /** The transport's immediate write of {@link #writeNow}: true if {@code frame} went (the caller releases it). */
    protected boolean writeNow0(AmFrame frame) {
        return false;
    }

    /** What a write fails with before the lane is connected or after it closed; nothing while connected. */
    protected final void ensureConnected() throws ClosedChannelException {
        switch (state) {
            case OPEN -> throw new NotYetConnectedException();
            case CLOSED -> throw new ClosedChannelException();
            default -> { }
        }
    }

    /** Marks the lane closed; true if it was not already. */
    protected final boolean markClosed() {
        State old = state;
        state = State.CLOSED;
        return old != State.CLOSED;
    }

    @Override
    public final ChannelConfig config() {
        return config;
    }

    @Override
    public final boolean isOpen() {
        return state != State.CLOSED;
    }

    @Override
    public boolean isActive() {
        return state == State.CONNECTED;
    }

    @Override
    public final ChannelMetadata metadata() {
        return METADATA;
    }

    /** Any loop: the lane registers no IoHandle (shm, which polls rings, overrides this). */
    @Override
    protected boolean isCompatible(EventLoop loop) {
        return true;
    }

    @Override
    protected final SocketAddress localAddress0() {
        return localAddress;
    }

    @Override
    protected final SocketAddress remoteAddress0() {
        return remoteAddress;
    }

    @Override
    protected final void doBind(SocketAddress localAddress) {
        throw new UnsupportedOperationException(getClass().getSimpleName() + " is created connected by its iface; "
                + "it cannot be bound");
    }

    @Override
    protected final void doDisconnect() throws Exception {
        doClose();
    }

    @Override
    protected AbstractUnsafe newUnsafe() {
        return new LaneUnsafe();
    }

    /** Flushes what the outbound buffer holds again: a write that waited for room, or the next batch. Loop only. */
    protected final void resumeWrites() {
        ((LaneUnsafe) unsafe()).resume();
    }

    /** The lane's unsafe: connecting is its iface's job. */
    protected class LaneUnsafe extends AbstractUnsafe {
        @Override
        public final void connect(SocketAddress remote, SocketAddress local, ChannelPromise promise) {
            promise.setFailure(new UnsupportedOperationException(AbstractLaneChannel.this.getClass().getSimpleName()
                    + " is connected by its iface"));
        }

        protected final void resume() {
            flush0();
        }

        @Override
        protected void flush0() {
            if (state == State.CONNECTED) {
                publishNow(); // first: immediate writes went in before anything queued now
            }
            super.flush0();
        }
    }
}
