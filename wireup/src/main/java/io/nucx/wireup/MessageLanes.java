package io.nucx.wireup;

import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelPromise;
import io.netty.util.concurrent.PromiseCombiner;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.ProtocolException;
import io.nucx.transport.AmFrame;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * The message lanes of one endpoint and how frames go onto them. Lane 0 is the AM lane chosen at wireup, lanes 1, 2...
 * its AM_BW lanes (connected by the side whose REQUEST was answered, each announced by LANE_ATTACH), and, after a
 * failover, replacement lanes appended behind them. Loop only.
 *
 * <p><b>Multi-lane.</b> Every frame goes on the AM lane except RNDV_DATA: rendezvous fragments carry their offset, so
 * they may arrive in any order, and are spread over every live lane in proportion to its bandwidth (each fragment to
 * the lane whose assigned bytes / bandwidth is lowest). A send's promise rides on its last fragment; with several lanes
 * it completes only once the last fragment written on every lane is out, since a lane completes in order.
 *
 * <p><b>Failover</b> (error mode failover): each side counts the frames it receives on each lane (wireup frames
 * aside) and confirms them with LANE_ACK at the end of each read batch. A frame is kept (a duplicate goes to the lane)
 * until confirmed, and its send's promise completes then, so a completed send is known to have arrived and its
 * buffer is free. When a lane goes inactive the endpoint does not fail: writes are held, the lanes are re-selected
 * (the first live lane takes over; with none left the side that dialled the AM lane connects a replacement from the
 * transports that did not fail), and each side sends LANE_FAILED with the number of frames it received on the lost lane
 * — counted only once that lane is closed on its side, so the number is final. On the peer's number a side completes
 * what the peer had (it arrived), sends the rest again on the new lane, in order, then replays the held writes. So
 * nothing is lost and nothing arrives twice.
 */
final class MessageLanes {

    static final String FAILOVER_COUNTER = "lane/failover";
    static final String RESENT_COUNTER = "lane/resent";

    /** One lane of the endpoint. */
    static final class Slot {
        final int index;
        final LaneSelector.Lane lane;
        final double bandwidth;
        Channel channel;
        boolean failed;
        /** Striping: bytes given to this lane, divided by its bandwidth. */
        double load;
        long dataBytes;
        ChannelFuture lastData;
        /** Failover, sending side: frames written and not yet confirmed, oldest first; how many were confirmed. */
        final ArrayDeque<Sent> unconfirmed = new ArrayDeque<>();
        long confirmed;
        /** Failover, receiving side: frames received on this lane and how many of them we confirmed. */
        long received;
        long receivedAcked;
        boolean finalSent;
        long peerFinal = -1;
        boolean resent;

        /** @param lane the lane, or null for one the peer dialled that never reached us (failed from the start) */
        Slot(int index, LaneSelector.Lane lane) {
            this.index = index;
            this.lane = lane;
            this.bandwidth = lane == null ? 1 : Math.max(1, LaneSelector.bandwidth(lane));
        }

        boolean live() {
            return channel != null && !failed && channel.isActive();
        }

        String name() {
            return lane == null ? "lane " + index + " (never attached)" : lane.name();
        }

        String transport() {
            return lane == null ? null : lane.local().transport();
        }

        /** Lost, and both sides' counts are exchanged and what the peer lacked was sent again. */
        boolean settled() {
            return failed && resent;
        }
    }

    /** A frame kept for the peer's confirmation, with the promise of its send. */
    record Sent(AmFrame frame, ChannelPromise promise) {
    }

    private final Endpoint endpoint;
    private final boolean tracking;
    private final List<Slot> slots = new ArrayList<>();
    private final Set<String> failedTransports = new LinkedHashSet<>();
    private final ArrayDeque<Sent> held = new ArrayDeque<>();
    private int am;
    private boolean suspended;
    private boolean released;
    /** Completes when a failover in progress has settled (a graceful close waits for it); null when none runs. */
    private io.netty.util.concurrent.Promise<Void> settledPromise;

    MessageLanes(Endpoint endpoint, LaneSelector.Lanes lanes, boolean tracking) {
        this.endpoint = endpoint;
        this.tracking = tracking;
        for (int i = 0; i < lanes.count(); i++) {
            slots.add(new Slot(i, lanes.lane(i)));
        }
    }

    /** Whether frames are kept until confirmed (error mode failover). */
    boolean tracking() {
        return tracking;
    }

    int size() {
        return slots.size();
    }

    Slot slot(int index) {
        return slots.get(index);
    }

    /** The lane carrying {@code ch}, or null. */
    Slot slotOf(Channel ch) {
        for (Slot s : slots) {
            if (s.channel == ch) {
                return s;
            }
        }
        return null;
    }

    Slot amSlot() {
        return slots.get(am);
    }

    /** Transports whose lane failed on this endpoint, in order. */
    Set<String> failedTransports() {
        return failedTransports;
    }

    /** Whether writes are held while a failover runs. */
    boolean suspended() {
        return suspended;
    }

    // ------------------------------------------------------------ writing

    /** Sends {@code frame} on its lane (or holds it during a failover); the promise completes as the class says. */
    void write(AmFrame frame, ChannelPromise promise) {
        if (released) {
            // The endpoint is ending: its last words (ATP(cancelled) for PUTs it stopped) go straight onto a live lane,
            // neither kept for confirmation nor held behind a failover that will not settle any more.
            Slot s = target();
            if (s == null) {
                frame.release();
                EndpointException why = endpoint.failure();
                promise.tryFailure(why != null ? why : new java.nio.channels.ClosedChannelException());
                return;
            }
            writeThrough(s, frame, promise);
            s.channel.flush();
            return;
        }
        if (suspended) {
            held.add(new Sent(frame, promise));
            return;
        }
        Slot s = frame.amId() == AmIds.RNDV_DATA ? stripe(frame.payload().readableBytes()) : slots.get(am);
        send(s, frame, promise);
    }

    private void send(Slot s, AmFrame frame, ChannelPromise promise) {
        if (frame.amId() == AmIds.RNDV_DATA) {
            s.dataBytes += frame.payload().readableBytes();
            if (slots.size() > 1) {
                // Done on this lane when written (or, tracking, confirmed); the send's last fragment waits for all.
                ChannelPromise onLane = endpoint.newPromise();
                sendOne(s, frame, onLane);
                s.lastData = onLane;
                if (!promise.isVoid()) {
                    completeAfterData(promise);
                }
                return;
            }
        }
        sendOne(s, frame, promise);
    }

    private void sendOne(Slot s, AmFrame frame, ChannelPromise promise) {
        if (tracking) {
            s.unconfirmed.add(new Sent(frame, promise));
            s.channel.write(frame.retainedDuplicate(), s.channel.voidPromise()); // a failed write closes the lane
            return;
        }
        writeThrough(s, frame, promise);
    }

    /** Writes {@code frame} on {@code s}, the promise completing from the lane's write. */
    private void writeThrough(Slot s, AmFrame frame, ChannelPromise promise) {
        Channel ch = s.channel;
        if (promise.isVoid()) {
            ch.write(frame, ch.voidPromise());
            return;
        }
        ChannelFuture f = ch.write(frame);
        if (f.isDone()) {
            complete(f, promise);
        } else {
            f.addListener((ChannelFutureListener) done -> complete(done, promise));
        }
    }

    private void complete(io.netty.util.concurrent.Future<?> lane, ChannelPromise promise) {
        if (lane.isSuccess()) {
            promise.trySuccess();
        } else {
            EndpointException why = endpoint.failure();
            promise.tryFailure(why != null ? why : lane.cause());
        }
    }

    /** The send's last fragment: done when every lane has written its last fragment (each lane completes in order). */
    private void completeAfterData(ChannelPromise promise) {
        PromiseCombiner all = new PromiseCombiner(endpoint.eventLoop());
        for (Slot s : slots) {
            if (s.lastData != null && !s.lastData.isDone()) {
                all.add(s.lastData);
            }
        }
        io.netty.util.concurrent.Promise<Void> done = endpoint.eventLoop().newPromise();
        done.addListener(f -> complete(f, promise));
        all.finish(done);
    }

    /** The live lane with the least load for its bandwidth takes the next {@code bytes}. */
    private Slot stripe(int bytes) {
        Slot best = null;
        for (Slot s : slots) {
            if (s.live() && (best == null || s.load + bytes / s.bandwidth < best.load + bytes / best.bandwidth)) {
                best = s;
            }
        }
        if (best == null) {
            return slots.get(am);
        }
        best.load += bytes / best.bandwidth;
        return best;
    }

    void flush() {
        for (Slot s : slots) {
            if (s.channel != null && !s.failed) {
                s.channel.flush();
            }
        }
    }

    /** RNDV_DATA payload bytes written on each lane, by lane index; for tests and diagnostics. */
    long[] dataBytes() {
        long[] out = new long[slots.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = slots.get(i).dataBytes;
        }
        return out;
    }

    // ------------------------------------------------------------ confirmations

    /** A frame (not wireup) arrived on lane {@code index}. */
    void received(int index) {
        slots.get(index).received++;
    }

    /** End of a read batch on lane {@code index}: confirm what arrived since the last LANE_ACK. */
    void confirmReceived(int index, Channel ch, long localEpId, long remoteEpId) {
        Slot s = slots.get(index);
        // Only on the lane's own channel: a batch ending on another channel of this endpoint (the lane dropped after a
        // simultaneous connect, a p2p auxiliary lane) would carry the ACK somewhere it may be lost.
        if (s.channel != ch || s.received == s.receivedAcked || remoteEpId == WireupMessage.INVALID_EP_ID
                || !ch.isActive()) {
            return;
        }
        s.receivedAcked = s.received;
        ch.writeAndFlush(WireupMessage.laneAck(localEpId, remoteEpId, index, s.received).toFrame(ch.alloc()),
                ch.voidPromise());
    }

    /** The peer's LANE_ACK: it has received {@code count} frames we sent on lane {@code index}. */
    void onConfirmed(int index, long count) {
        Slot s = checkedSlot(index, "LANE_ACK");
        if (s.failed) {
            return; // read from a lane being given up: its final count settles it (LANE_FAILED)
        }
        long n = count - s.confirmed;
        if (n < 0 || n > s.unconfirmed.size()) {
            throw new ProtocolException("LANE_ACK confirms " + count + " frames on lane " + index + " of "
                    + endpoint + ", which has " + s.confirmed + " confirmed and " + s.unconfirmed.size() + " waiting");
        }
        confirm(s, n);
    }

    private static void confirm(Slot s, long n) {
        for (long i = 0; i < n; i++) {
            Sent sent = s.unconfirmed.poll();
            sent.frame().release();
            sent.promise().trySuccess();
        }
        s.confirmed += n;
    }

    private Slot checkedSlot(int index, String what) {
        if (index < 0 || index >= slots.size()) {
            throw new ProtocolException(what + " names lane " + index + " of " + endpoint + ", which has "
                    + slots.size());
        }
        return slots.get(index);
    }

    // ------------------------------------------------------------ failover

    /**
     * Lane {@code s} went inactive. Returns whether the endpoint goes on without it (failover); false means the
     * endpoint fails (not tracking, or no transport is left).
     */
    boolean laneLost(Slot s) {
        if (!tracking || released || endpoint.remoteEndpointId() == WireupMessage.INVALID_EP_ID) {
            return false; // before the REPLY the peer could not tell which endpoint a new lane belongs to
        }
        if (s.failed) {
            return true;
        }
        s.failed = true;
        suspend();
        if (s.transport() != null) {
            failedTransports.add(s.transport());
        }
        endpoint.worker().counters().counter(FAILOVER_COUNTER).increment();
        Slot target = target();
        if (target == null) {
            if (!endpoint.dialsLanes()) {
                return true; // the dialling side connects a replacement; keepalive bounds the wait
            }
            return connectReplacement();
        }
        takeOver(target);
        return true;
    }

    private void suspend() {
        suspended = true;
        if (settledPromise == null || settledPromise.isDone()) {
            settledPromise = endpoint.eventLoop().newPromise();
        }
    }

    /** Completes when no failover is in progress (at once when none is). */
    io.netty.util.concurrent.Future<Void> settled() {
        return suspended && settledPromise != null ? settledPromise
                : endpoint.eventLoop().<Void>newPromise().setSuccess(null);
    }

    /** The lane that carries AM traffic: the AM lane while it lives, else the first live one. */
    private Slot target() {
        Slot a = slots.get(am);
        return a.live() ? a : firstLive();
    }

    private Slot firstLive() {
        for (Slot s : slots) {
            if (s.live()) {
                return s;
            }
        }
        return null;
    }

    /** {@code target} is the AM lane now: tell the peer what we received on each lost lane, resend what we can. */
    private void takeOver(Slot target) {
        am = target.index;
        endpoint.amLaneChanged(target.channel);
        // Every lost lane not settled yet: our count again on this lane (the lane an earlier one went on may have
        // died before the peer read it; the peer takes a repeat of the same count).
        for (Slot s : slots) {
            if (s.failed && !s.resent) {
                s.finalSent = true;
                target.channel.writeAndFlush(WireupMessage.laneFailed(endpoint.endpointId(),
                        endpoint.remoteEndpointId(), s.index, s.received).toFrame(target.channel.alloc()),
                        target.channel.voidPromise());
            }
        }
        for (Slot s : slots) {
            if (s.failed) {
                resendIfReady(s);
            }
        }
    }

    /** No lane is left: connect one from the transports that did not fail (the dialling side only). */
    private boolean connectReplacement() {
        LaneSelector.Lane lane;
        try {
            lane = LaneSelector.selectAmLane(endpoint.worker().ifaces(), endpoint.worker().address(),
                    endpoint.remoteWorkerAddress(), endpoint.errorMode(), failedTransports, null);
        } catch (UnreachableException e) {
            return false;
        }
        Slot r = new Slot(slots.size(), lane);
        slots.add(r);
        ChannelFuture f = lane.iface().connect(lane.remote().deviceAddress(), lane.remote().ifaceAddress(),
                new LaneHandler(endpoint.worker(), endpoint, r.index));
        f.addListener((ChannelFutureListener) done -> {
            if (!done.isSuccess()) {
                endpoint.fail(new EndpointException(endpoint.endpointId(), (EndpointAddress) endpoint.remoteAddress(),
                        "every lane failed and the replacement " + lane.name() + " did not connect: " + done.cause(),
                        done.cause()));
                return;
            }
            if (released || !endpoint.isOpen()) {
                done.channel().close();
                return;
            }
            attached(r, done.channel(), true);
        });
        return true;
    }

    /** Our side of a lane is up: announce it (the dialler) and use it. */
    void attached(Slot s, Channel ch, boolean announce) {
        s.channel = ch;
        double least = Double.MAX_VALUE;
        for (Slot o : slots) {
            if (o != s && o.live()) {
                least = Math.min(least, o.load);
            }
        }
        s.load = least == Double.MAX_VALUE ? 0 : least; // a late lane does not take every fragment to catch up
        if (announce) {
            ch.writeAndFlush(WireupMessage.laneAttach(endpoint.endpointId(), endpoint.remoteEndpointId(), s.index,
                    endpoint.worker().uuid(), s.lane.local().transport()).toFrame(ch.alloc()), ch.voidPromise());
        }
        if (suspended && target() == s) {
            takeOver(s);
        }
    }

    /**
     * The peer dialled lane {@code index} (an AM_BW lane, or a replacement after a failover) and announced it on
     * {@code ch}. A replacement is the next index; its transport is the one the peer names.
     */
    void onAttach(int index, String transport, Channel ch) {
        if (index == 0 || index > 64) {
            throw new ProtocolException("LANE_ATTACH for lane " + index + " of " + endpoint);
        }
        LaneSelector.Lane lane = endpoint.worker().laneTo(endpoint.remoteWorkerAddress(), transport);
        if (lane == null) {
            throw new ProtocolException("LANE_ATTACH over " + transport + ", which " + endpoint.worker().name()
                    + " cannot use to " + endpoint.remoteWorkerAddress().name());
        }
        while (slots.size() < index) { // lanes the peer dialled that never reached us: failed from the start
            Slot gone = new Slot(slots.size(), null);
            gone.failed = true;
            slots.add(gone);
        }
        if (index < slots.size()) {
            Slot s = slots.get(index);
            if (s.channel != null || s.failed) {
                // Already attached, or given up (the peer's LANE_FAILED came first): this lane is not used.
                if (s.failed) {
                    ch.close();
                    return;
                }
                throw new ProtocolException("LANE_ATTACH for lane " + index + " of " + endpoint
                        + ", which is attached already");
            }
            if (!transport.equals(s.transport())) {
                // The dialler's limits chose another lane here (NUCX_MAX_RNDV_LANES, NUCX_MULTI_LANE_MAX_RATIO are
                // each side's own): the dialler's list is the pair's.
                s = new Slot(index, lane);
                slots.set(index, s);
            }
            attached(s, ch, false);
            return;
        }
        Slot r = new Slot(index, lane); // an AM_BW lane our limits did not choose, or a failover replacement
        slots.add(r);
        attached(r, ch, false);
    }

    /**
     * The peer's LANE_FAILED: it received {@code count} frames from us on lane {@code index}. If that lane still looks
     * alive here we close it (the peer gave it up) and count ours once it is closed.
     */
    void onPeerFinal(int index, long count) {
        if (!tracking || index < 0 || index > 64) {
            throw new ProtocolException("unexpected LANE_FAILED for lane " + index + " of " + endpoint);
        }
        while (slots.size() <= index) { // a lane the peer dialled and lost before its LANE_ATTACH reached us
            Slot gone = new Slot(slots.size(), null);
            gone.failed = true;
            slots.add(gone);
        }
        Slot s = slots.get(index);
        if (s.peerFinal >= 0) {
            if (s.peerFinal != count) {
                throw new ProtocolException("LANE_FAILED for lane " + index + " of " + endpoint + " says " + count
                        + " frames, earlier " + s.peerFinal);
            }
            return; // a repeat (sent again on a newer lane)
        }
        s.peerFinal = count;
        if (!s.failed) {
            s.channel.close(); // the peer gave it up; its channelInactive runs laneLost, which counts ours
            return;
        }
        if (!s.finalSent) { // never attached here: we received nothing on it
            suspend();
            Slot target = target();
            if (target != null) {
                takeOver(target);
            }
        }
        resendIfReady(s);
    }

    private void resendIfReady(Slot s) {
        Slot target = target();
        if (!s.finalSent || s.peerFinal < 0 || s.resent || target == null || released) {
            return;
        }
        long had = s.peerFinal - s.confirmed;
        if (had < 0 || had > s.unconfirmed.size()) {
            endpoint.fail(new EndpointException(endpoint.endpointId(), (EndpointAddress) endpoint.remoteAddress(),
                    "the peer received " + s.peerFinal + " frames on lane " + s.index + " (" + s.name() + "), but "
                    + (s.confirmed + s.unconfirmed.size()) + " were sent and " + s.confirmed + " confirmed", null));
            return;
        }
        s.resent = true;
        confirm(s, had);
        int again = s.unconfirmed.size();
        for (Sent sent; (sent = s.unconfirmed.poll()) != null; ) {
            sendOne(target, sent.frame(), sent.promise()); // in order, behind nothing new: writes are still held
        }
        endpoint.worker().counters().counter(RESENT_COUNTER).add(again);
        target.channel.flush();
        for (Slot o : slots) {
            if (o.failed && !o.resent) {
                return; // another lost lane is still being settled
            }
        }
        suspended = false;
        if (settledPromise != null) {
            settledPromise.trySuccess(null);
        }
        for (Sent h; !suspended && (h = held.poll()) != null; ) {
            write(h.frame(), h.promise());
        }
        flush();
    }

    // ------------------------------------------------------------ end

    /** The endpoint failed or closed: every kept and held frame is released, its send failed. Once. */
    void releaseAll(Throwable cause) {
        if (released) {
            return;
        }
        released = true;
        if (settledPromise != null) {
            settledPromise.trySuccess(null);
        }
        for (Slot s : slots) {
            for (Sent sent; (sent = s.unconfirmed.poll()) != null; ) {
                fail(sent, cause);
            }
        }
        for (Sent h; (h = held.poll()) != null; ) {
            fail(h, cause);
        }
    }

    private static void fail(Sent sent, Throwable cause) {
        sent.frame().release();
        if (!sent.promise().isVoid()) {
            sent.promise().tryFailure(cause);
        }
    }

    /** The channels of every live message lane. */
    List<Channel> liveChannels() {
        List<Channel> out = new ArrayList<>();
        for (Slot s : slots) {
            if (s.live()) {
                out.add(s.channel);
            }
        }
        return out;
    }

    /** Closes every lane but {@code except} (closed by the caller). */
    void closeAll(Channel except) {
        for (Slot s : slots) {
            if (s.channel != null && s.channel != except) {
                s.channel.close();
            }
        }
    }

    /** The promises of frames waiting for the peer's confirmation (a graceful close waits for them). */
    List<io.netty.util.concurrent.Future<Void>> awaitingConfirmation() {
        List<io.netty.util.concurrent.Future<Void>> out = new ArrayList<>();
        for (Slot s : slots) {
            for (Sent sent : s.unconfirmed) {
                if (!sent.promise().isVoid()) {
                    out.add(sent.promise());
                }
            }
        }
        for (Sent h : held) {
            if (!h.promise().isVoid()) {
                out.add(h.promise());
            }
        }
        return out;
    }

    /** Frames kept for confirmation, all lanes; for tests. */
    int unconfirmed() {
        int n = 0;
        for (Slot s : slots) {
            n += s.unconfirmed.size();
        }
        return n;
    }
}
