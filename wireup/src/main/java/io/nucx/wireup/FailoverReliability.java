package io.nucx.wireup;

import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelPromise;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import io.nucx.EndpointException;
import io.nucx.UnreachableException;
import io.nucx.protocol.ProtocolException;
import io.nucx.transport.AmFrame;

import java.util.ArrayDeque;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Error mode failover's reliability over an endpoint's lanes: nothing is lost or delivered twice when a lane dies.
 *
 * <p><b>Confirmation.</b> Each side counts the frames it receives on each lane (wireup frames aside) and confirms them
 * with LANE_ACK at the end of each read batch, on that lane. A frame is kept (a retained duplicate goes to the lane,
 * which may move reader indexes) until confirmed, and its send's promise completes then: a completed send has arrived
 * and its buffer is free.
 *
 * <p><b>Takeover.</b> When a lane goes inactive the endpoint does not fail: writes are held, the first live lane
 * becomes the AM lane (keepalive moves with it) or, with none left, the side that dialled the lanes at wireup connects
 * a replacement over a lane that did not fail (announced by LANE_ATTACH at the next index): failed lanes are excluded
 * by transport and device, so a node with two tcp networks fails over from one to the other. A lane whose channel
 * closed counts as lost as soon as a takeover or a loss looks at the lanes, even before its channelInactive runs, so
 * the AM lane never moves ahead of its unconfirmed frames; its count goes only once that inactive ran.
 *
 * <p><b>Settling.</b> Each side, once the lost lane is closed on its side and its channelInactive ran (so no more
 * frames can come from it), sends LANE_FAILED with the number of frames it received on it — final, hence no
 * duplicate. On the peer's number a side completes what the peer had (it arrived), sends the rest again on the new
 * lane, in order, then replays the held writes — hence no loss. LANE_FAILED for every lost lane, settled here or not, is sent again on each lane that takes
 * over (a takeover lane may die before the peer read it, and this side settling tells nothing of whether the peer
 * has our count), and a repeat of the same count is accepted. Loop only.
 */
final class FailoverReliability {

    static final String FAILOVER_COUNTER = "lane/failover";
    static final String RESENT_COUNTER = "lane/resent";

    /** STEADY: frames go out; FAILING_OVER: writes are held until every lost lane is settled; RELEASED: ended. */
    private enum State { STEADY, FAILING_OVER, RELEASED }

    private final EndpointLanes lanes;
    private final EndpointChannel endpoint;
    /** The lanes that failed, by "transport/device": a replacement takes none of them (another device may serve). */
    private final Set<String> failedLanes = new LinkedHashSet<>();
    private final ArrayDeque<Lane.Sent> held = new ArrayDeque<>();
    private State state = State.STEADY;
    /** Completes when the failover in progress has settled (a graceful close waits for it). */
    private Promise<Void> settledPromise;

    FailoverReliability(EndpointLanes lanes, EndpointChannel endpoint) {
        this.lanes = lanes;
        this.endpoint = endpoint;
    }

    /** Whether writes are held while a failover runs. */
    boolean holding() {
        return state == State.FAILING_OVER;
    }

    void hold(AmFrame frame, ChannelPromise promise) {
        held.add(new Lane.Sent(frame, promise));
    }

    /** Writes {@code frame} on {@code lane} and keeps it until the peer confirms it; its promise completes then. */
    void track(Lane lane, AmFrame frame, ChannelPromise promise) {
        lane.unconfirmed.add(new Lane.Sent(frame, promise));
        lane.channel().write(frame.retainedDuplicate(), lane.channel().voidPromise()); // a failed write closes it
    }

    // ------------------------------------------------------------ confirmations

    /** A frame (not wireup) arrived on {@code lane}. */
    void received(Lane lane) {
        lane.received++;
    }

    /** End of a read batch on {@code ch}: confirm on {@code lane} what arrived since its last LANE_ACK. */
    void readBatchEnded(Lane lane, Channel ch) {
        // Only on the lane's own channel: a batch ending on another channel of this endpoint (a lane dropped after a
        // simultaneous connect, a p2p auxiliary lane) would carry the ACK somewhere it may be lost.
        if (lane.channel() != ch || lane.received == lane.receivedAcked
                || endpoint.remoteEndpointId() == WireupMessage.INVALID_EP_ID || !ch.isActive()) {
            return;
        }
        lane.receivedAcked = lane.received;
        ch.writeAndFlush(WireupMessage.laneAck(endpoint.endpointId(), endpoint.remoteEndpointId(), lane.index,
                lane.received).toFrame(ch.alloc()), ch.voidPromise());
    }

    /** The peer's LANE_ACK: it has received {@code count} frames we sent on lane {@code index}. */
    void onLaneAck(int index, long count) {
        Lane l = lanes.checked(index, "LANE_ACK");
        if (l.isLost()) {
            return; // read from a lane being given up: its final count settles it (LANE_FAILED)
        }
        long n = count - l.confirmed;
        if (n < 0 || n > l.unconfirmed.size()) {
            throw new ProtocolException("LANE_ACK confirms " + count + " frames on lane " + index + " of "
                    + endpoint + ", which has " + l.confirmed + " confirmed and " + l.unconfirmed.size()
                    + " waiting");
        }
        confirm(l, n);
    }

    private static void confirm(Lane l, long n) {
        for (long i = 0; i < n; i++) {
            Lane.Sent sent = l.unconfirmed.poll();
            sent.frame().release();
            sent.promise().trySuccess();
        }
        l.confirmed += n;
    }

    // ------------------------------------------------------------ failover

    /**
     * {@code lost} went inactive. Returns whether the endpoint goes on without it; false means the endpoint fails
     * (before the REPLY, where the peer could not tell which endpoint a new lane belongs to).
     */
    boolean laneLost(Lane lost) {
        if (state == State.RELEASED || endpoint.remoteEndpointId() == WireupMessage.INVALID_EP_ID) {
            return false;
        }
        if (lost.isLost()) {
            if (!lost.countFinal) { // noticed closed by a failover before (noticeClosedLanes): its count is final now
                lost.countFinal = true;
                Lane target = lanes.target();
                if (target != null) {
                    sendCount(target, lost);
                    resendIfReady(lost);
                }
            }
            return true;
        }
        lost.countFinal = true;
        markLost(lost);
        startFailover();
        noticeClosedLanes();
        Lane target = lanes.target();
        if (target == null) {
            if (!lanes.dialsLanes()) {
                return true; // the dialling side connects a replacement; keepalive bounds the wait
            }
            return connectReplacement();
        }
        takeOver(target);
        return true;
    }

    /** {@code l} is given up: counted, and a replacement is not taken over its transport and device. */
    private void markLost(Lane l) {
        l.lost();
        if (l.selection != null) {
            failedLanes.add(l.name());
        }
        endpoint.worker().counters().counter(FAILOVER_COUNTER).increment();
    }

    /**
     * Lost too: a lane whose channel closed while its channelInactive (which runs {@link #laneLost}) still waits in
     * the loop's queue. {@link EndpointLanes#target} passes it over already; were it not counted lost, a takeover
     * would move the AM lane off it and, the lanes known lost settled, go back to STEADY: writes would go on the new
     * AM lane ahead of the closed one's unconfirmed frames, sent again only once its inactive ran (out of order).
     * Its count waits for that inactive ({@link Lane#countFinal}): tcp's decoder may still hand up frames it held.
     */
    private void noticeClosedLanes() {
        for (Lane l : lanes.all()) {
            if (l.state() == Lane.State.ACTIVE && !l.channel().isActive()) {
                markLost(l);
            }
        }
    }

    private void startFailover() {
        state = State.FAILING_OVER;
        if (settledPromise == null || settledPromise.isDone()) {
            settledPromise = endpoint.eventLoop().newPromise();
        }
    }

    /** Completes when no failover is in progress (at once when none is). */
    Future<Void> settled() {
        return state == State.FAILING_OVER && settledPromise != null ? settledPromise
                : endpoint.eventLoop().<Void>newPromise().setSuccess(null);
    }

    /** {@code target} is the AM lane now: tell the peer what we received on each lost lane, resend what we can. */
    void takeOver(Lane target) {
        noticeClosedLanes();
        lanes.amLaneChanged(target);
        for (Lane l : lanes.all()) {
            // Settled ones too: that the peer's count reached us says nothing of ours, which may have gone on a lane
            // that died before the peer read it; without it the peer holds its writes for ever. It takes a repeat.
            if (l.isLost() && l.countFinal) {
                sendCount(target, l);
            }
        }
        for (Lane l : lanes.all()) {
            if (l.state() == Lane.State.LOST) {
                resendIfReady(l);
            }
        }
    }

    /** Our final count of what we received on lost lane {@code l}, to the peer on {@code target} (LANE_FAILED). */
    private void sendCount(Lane target, Lane l) {
        l.finalSent = true;
        target.channel().writeAndFlush(WireupMessage.laneFailed(endpoint.endpointId(), endpoint.remoteEndpointId(),
                l.index, l.received).toFrame(target.channel().alloc()), target.channel().voidPromise());
    }

    /** No lane is left: connect one from the transports that did not fail (the dialling side only). */
    private boolean connectReplacement() {
        LaneSelector.Lane sel;
        try {
            sel = endpoint.worker().selectReplacement(endpoint.remoteWorkerAddress(), endpoint.errorMode(),
                    failedLanes);
        } catch (UnreachableException e) {
            return false;
        }
        Lane r = lanes.add(sel);
        ChannelFuture f = sel.iface().connect(sel.remote().deviceAddress(), sel.remote().ifaceAddress(),
                new LaneInboundHandler(endpoint.worker(), endpoint, r.index));
        f.addListener((ChannelFutureListener) done -> {
            if (!done.isSuccess()) {
                endpoint.fail(new EndpointException(endpoint.endpointId(), endpoint.remoteAddress(),
                        "every lane failed and the replacement " + sel.name() + " did not connect: " + done.cause(),
                        done.cause()));
            } else if (state == State.RELEASED || !endpoint.isOpen()) {
                done.channel().close();
            } else {
                lanes.attached(r, done.channel(), true);
            }
        });
        return true;
    }

    /** A lane joined while writes are held: it takes over if it is now the one to carry them. */
    void joined(Lane l) {
        if (state == State.FAILING_OVER && lanes.target() == l) {
            takeOver(l);
        }
    }

    /**
     * The peer's LANE_FAILED: it received {@code count} frames from us on lane {@code index}. If that lane still looks
     * alive here we close it (the peer gave it up) and count ours once it is closed.
     */
    void onLaneFailed(int index, long count) {
        if (index < 0 || index > EndpointLanes.MAX_LANES) {
            throw new ProtocolException("LANE_FAILED for lane " + index + " of " + endpoint);
        }
        Lane l = lanes.ensure(index); // a lane the peer dialled and lost before its LANE_ATTACH reached us
        if (l.peerFinal >= 0) {
            if (l.peerFinal != count) {
                throw new ProtocolException("LANE_FAILED for lane " + index + " of " + endpoint + " says " + count
                        + " frames, earlier " + l.peerFinal);
            }
            return; // a repeat (sent again on a newer lane)
        }
        l.peerFinal = count;
        if (!l.isLost()) {
            l.channel().close(); // the peer gave it up; its channelInactive runs laneLost, which counts ours
            return;
        }
        if (!l.finalSent) { // never attached here (we received nothing on it), or closed and its inactive not run
            startFailover();
            Lane target = lanes.target();
            if (target != null) {
                takeOver(target);
            }
        }
        resendIfReady(l);
    }

    private void resendIfReady(Lane l) {
        Lane target = lanes.target();
        if (!l.finalSent || l.peerFinal < 0 || l.state() != Lane.State.LOST || target == null
                || state == State.RELEASED) {
            return;
        }
        long had = l.peerFinal - l.confirmed;
        if (had < 0 || had > l.unconfirmed.size()) {
            endpoint.fail(new EndpointException(endpoint.endpointId(), endpoint.remoteAddress(),
                    "the peer received " + l.peerFinal + " frames on lane " + l.index + " (" + l.name() + "), but "
                    + (l.confirmed + l.unconfirmed.size()) + " were sent and " + l.confirmed + " confirmed", null));
            return;
        }
        l.settled();
        confirm(l, had);
        int again = l.unconfirmed.size();
        for (Lane.Sent sent; (sent = l.unconfirmed.poll()) != null; ) {
            track(target, sent.frame(), sent.promise()); // in order, behind nothing new: writes are still held
        }
        endpoint.worker().counters().counter(RESENT_COUNTER).add(again);
        target.channel().flush();
        for (Lane o : lanes.all()) {
            if (o.state() == Lane.State.LOST) {
                return; // another lost lane is still being settled
            }
        }
        state = State.STEADY;
        if (settledPromise != null) {
            settledPromise.trySuccess(null);
        }
        for (Lane.Sent h; state == State.STEADY && (h = held.poll()) != null; ) {
            lanes.write(h.frame(), h.promise());
        }
        lanes.flush();
    }

    // ------------------------------------------------------------ end

    /** The endpoint ended: every kept and held frame is released, its send failed. Once. */
    void releaseAll(Throwable cause) {
        if (state == State.RELEASED) {
            return;
        }
        state = State.RELEASED;
        if (settledPromise != null) {
            settledPromise.trySuccess(null);
        }
        for (Lane l : lanes.all()) {
            for (Lane.Sent sent; (sent = l.unconfirmed.poll()) != null; ) {
                fail(sent, cause);
            }
        }
        for (Lane.Sent h; (h = held.poll()) != null; ) {
            fail(h, cause);
        }
    }

    private static void fail(Lane.Sent sent, Throwable cause) {
        sent.frame().release();
        if (!sent.promise().isVoid()) {
            sent.promise().tryFailure(cause);
        }
    }

    /** What a graceful close waits for: frames not yet confirmed, held writes, a failover in progress. */
    void collectOutstanding(List<Future<?>> out) {
        for (Lane l : lanes.all()) {
            for (Lane.Sent sent : l.unconfirmed) {
                if (!sent.promise().isVoid()) {
                    out.add(sent.promise());
                }
            }
        }
        for (Lane.Sent h : held) {
            if (!h.promise().isVoid()) {
                out.add(h.promise());
            }
        }
        out.add(settled());
    }

    /** Frames kept for confirmation, all lanes; for tests. */
    int unconfirmed() {
        int n = 0;
        for (Lane l : lanes.all()) {
            n += l.unconfirmed.size();
        }
        return n;
    }
}
