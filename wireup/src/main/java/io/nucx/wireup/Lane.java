package io.nucx.wireup;

import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.nucx.transport.AmFrame;
import io.nucx.transport.LaneBacklog;
import io.nucx.transport.ShortFrameWriter;

import java.util.ArrayDeque;

/**
 * One message lane of an endpoint: lane 0 is the AM lane chosen at wireup, lanes 1, 2... its AM_BW lanes and, after a
 * failover, replacements. Holds the lane's channel, its lifecycle, and the per-lane counts of striping and of
 * failover's confirmations. Loop only.
 */
final class Lane {

    /**
     * UNATTACHED until its channel is connected (or, on the accepting side, announced by LANE_ATTACH); ACTIVE while it
     * carries frames; LOST once its channel closed (failover counts still to settle); SETTLED when both sides'
     * counts were exchanged and what the peer lacked was sent again.
     */
    enum State { UNATTACHED, ACTIVE, LOST, SETTLED }

    /** A frame kept for the peer's confirmation (failover), with the promise of its send. */
    record Sent(AmFrame frame, ChannelPromise promise) {
    }

    final int index;
    /** Its selection, or null for a lane the peer dialled that never reached us (lost from the start). */
    final LaneSelector.Lane selection;
    final double bandwidth;
    private State state = State.UNATTACHED;
    private Channel channel;

    /** Striping: bytes given to this lane divided by its bandwidth; rendezvous data bytes written; the last of them. */
    double load;
    long dataBytes;
    ChannelFuture lastData;

    /** Failover, sending side: frames written and not yet confirmed, oldest first; how many were confirmed. */
    final ArrayDeque<Sent> unconfirmed = new ArrayDeque<>();
    long confirmed;
    /** Failover, receiving side: frames received on this lane and how many of them we confirmed. */
    long received;
    long receivedAcked;
    /** Failover: our final count went to the peer; the peer's final count of what it received from us (-1: none). */
    boolean finalSent;
    long peerFinal = -1;
    /**
     * Failover: nothing more can come from this lane, so {@link #received} is final: its channelInactive ran (tcp's
     * decoder hands up what it still held before that), or it never had a channel.
     */
    boolean countFinal;
    /** Failover keepalive: a frame came on this lane since the last tick; ticks it has been silent with work on it. */
    boolean heard = true;
    int silentTicks;

    /** Its channel's short frame writer's context (tcp's framing), once looked for; null when it has none. */
    private ChannelHandlerContext shortWriter;
    private boolean shortWriterLooked;

    Lane(int index, LaneSelector.Lane selection) {
        this.index = index;
        this.selection = selection;
        this.bandwidth = selection == null ? 1 : Math.max(1, LaneSelector.bandwidth(selection));
    }

    /** A lane the peer dialled and lost before its LANE_ATTACH reached us. */
    static Lane neverAttached(int index) {
        Lane l = new Lane(index, null);
        l.state = State.LOST;
        l.countFinal = true;
        return l;
    }

    State state() {
        return state;
    }

    Channel channel() {
        return channel;
    }

    void attach(Channel ch) {
        assert state == State.UNATTACHED : this;
        channel = ch;
        state = State.ACTIVE;
    }

    /**
     * Where a short frame given as its parts may be written on this lane now ({@link ShortFrameWriter#ready}), or null:
     * none in its pipeline, or not now. The writer is looked for once: a lane's framing is set before it carries frames.
     */
    ChannelHandlerContext shortWriter() {
        if (channel == null) {
            return null;
        }
        if (!shortWriterLooked) {
            shortWriterLooked = true;
            shortWriter = ShortFrameWriter.find(channel);
        }
        return ShortFrameWriter.ready(channel, shortWriter);
    }

    /** Its channel closed (or it never came): from now on its counts settle it. */
    void lost() {
        if (state == State.ACTIVE || state == State.UNATTACHED) {
            state = State.LOST;
        }
    }

    void settled() {
        assert state == State.LOST : this;
        state = State.SETTLED;
    }

    boolean isLost() {
        return state == State.LOST || state == State.SETTLED;
    }

    /** It carries frames now. */
    boolean live() {
        return state == State.ACTIVE && channel.isActive();
    }

    /** Live, with frames of the peer's unread in its transport and a read requested (keepalive counts them). */
    boolean peerFramesWaiting() {
        return live() && LaneBacklog.peerFramesWaiting(channel);
    }

    String name() {
        return selection == null ? "lane " + index + " (never attached)" : selection.name();
    }

    String transport() {
        return selection == null ? null : selection.local().transport();
    }

    @Override
    public String toString() {
        return "lane " + index + " " + name() + " " + state;
    }
}
