package io.nucx.wireup;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.channel.DefaultChannelPromise;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import io.netty.util.concurrent.PromiseCombiner;
import io.nucx.NucxClosedException;
import io.nucx.WireupException;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.MemoryDomain;
import io.nucx.protocol.ProtocolException;
import io.nucx.protocol.RmaRail;
import io.nucx.transport.AbstractLaneChannel;
import io.nucx.transport.AmFrame;
import io.nucx.transport.Capability;
import io.nucx.transport.Iface;
import io.nucx.transport.LaneBacklog;
import io.nucx.transport.ShortFrameWriter;
import io.nucx.transport.rma.RmaIface;
import io.nucx.transport.rma.RmaLane;

import java.nio.channels.ClosedChannelException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.StringJoiner;

/**
 * The lanes an endpoint is multiplexed over and how its frames go onto them: the message lanes ({@link Lane}: the AM
 * lane, its AM_BW lanes, failover replacements) and the RMA lane. Which lane a frame takes is the
 * {@link LaneDistributor}'s decision; in error mode failover the {@link FailoverReliability} keeps every frame until
 * the peer confirms it. A send's promise rides on its last frame; with several lanes, rendezvous data's last fragment
 * completes only once every lane has written its last fragment (each lane completes in order). Loop only.
 */
final class EndpointLanes {

    /** Lane indexes a peer may name (AM_BW lanes plus failover replacements). */
    static final int MAX_LANES = 64;

    private final EndpointChannel endpoint;
    private final LaneSelector.Lanes selection;
    private final List<Lane> lanes = new ArrayList<>();
    private final LaneDistributor distributor = new LaneDistributor();
    /** Error mode failover only, else null. */
    private final FailoverReliability reliability;
    /** The lane carrying active messages now (0 unless a failover moved it). */
    private int am;
    /** This side's REQUEST was answered: it dials the AM_BW and replacement lanes. Fixed at wireup. */
    private boolean dialsLanes;
    /** A graceful EP_REMOVED goes on every lane; the lanes it arrived on (acted on once all have it). */
    private Set<Channel> removedOn;
    /** RMA and AMO lanes that connect to the peer's iface (cma), connected on first use, by pair of entries. */
    private final Map<LaneSelector.Pair, Channel> rmaChannels = new HashMap<>();
    /** The p2p connections (rdma's queue pairs; tcp p2p), made with wireup's REQUEST / REPLY. */
    private P2pConnections p2p;
    /** Wireup's leftovers that carry no data (a lane dropped after a simultaneous connect, a p2p auxiliary lane). */
    private final List<Channel> auxiliary = new ArrayList<>(2);
    private Channel ownLane;
    /**
     * {@link #rmaRails} by capability (ordinal): kept while each of its lanes is active and every selected lane was in
     * it, as every rendezvous message asks on both sides and the answer changes only when a lane connects or goes.
     */
    private final List<?>[] railsBy = new List<?>[Capability.values().length];
    /** {@link #memoryDomains} by capability (ordinal): fixed by the selection, made on first use. */
    private final List<?>[] domainsBy = new List<?>[Capability.values().length];

    EndpointLanes(EndpointChannel endpoint, LaneSelector.Lanes selection, boolean failover) {
        this.endpoint = endpoint;
        this.selection = selection;
        for (int i = 0; i < selection.count(); i++) {
            lanes.add(new Lane(i, selection.lane(i)));
        }
        this.reliability = failover ? new FailoverReliability(this, endpoint) : null;
    }

    // ------------------------------------------------------------ topology

    List<Lane> all() {
        return lanes;
    }

    int size() {
        return lanes.size();
    }

    Lane lane(int index) {
        return lanes.get(index);
    }

    /** Lane {@code index}, or a protocol error naming {@code what} when there is none. */
    Lane checked(int index, String what) {
        if (index < 0 || index >= lanes.size()) {
            throw new ProtocolException(what + " names lane " + index + " of " + endpoint + ", which has "
                    + lanes.size());
        }
        return lanes.get(index);
    }

    /** Lane {@code index}, adding lanes never attached here up to it (the peer dialled and lost them). */
    Lane ensure(int index) {
        while (lanes.size() <= index) {
            lanes.add(Lane.neverAttached(lanes.size()));
        }
        return lanes.get(index);
    }

    /** The lane whose channel is {@code ch}, or null. */
    Lane laneOf(Channel ch) {
        for (Lane l : lanes) {
            if (l.channel() == ch) {
                return l;
            }
        }
        return null;
    }

    /** The lane carrying active messages (and keepalive) now. */
    Lane am() {
        return lanes.get(am);
    }

    /** Its channel, or null before wireup connected it. */
    Channel amChannel() {
        return lanes.get(am).channel();
    }

    /** The lane that carries AM traffic: the AM lane while it lives, else the first live one; null if none. */
    Lane target() {
        Lane a = lanes.get(am);
        if (a.live()) {
            return a;
        }
        for (Lane l : lanes) {
            if (l.live()) {
                return l;
            }
        }
        return null;
    }

    /**
     * {@code l} carries the endpoint's active messages from now on (failover). The endpoint's writability follows the
     * AM lane, and neither lane tells of this change (the old one closes as it was, the new one may never change): the
     * endpoint's handlers hear of it here, or one that waits for room would wait for ever.
     */
    void amLaneChanged(Lane l) {
        boolean hadRoom = isWritable();
        am = l.index;
        if (isWritable() != hadRoom && endpoint.isRegistered()) {
            endpoint.pipeline().fireChannelWritabilityChanged();
        }
    }

    Lane add(LaneSelector.Lane sel) {
        Lane l = new Lane(lanes.size(), sel);
        lanes.add(l);
        return l;
    }

    boolean failover() {
        return reliability != null;
    }

    FailoverReliability reliability() {
        return reliability;
    }

    boolean dialsLanes() {
        return dialsLanes;
    }

    // ------------------------------------------------------------ wireup

    /** Wireup connected the pair's AM lane on {@code ch}. */
    void amConnected(Channel ch) {
        lanes.get(0).attach(ch);
    }

    /**
     * This side's REQUEST was answered: it connects lanes 1, 2... and announces each with LANE_ATTACH, its first
     * frame; the peer then uses it too. It also dials replacements after a failover that leaves no lane.
     */
    void connectBwLanes() {
        dialsLanes = true;
        for (int i = 1; i < selection.count(); i++) {
            Lane l = lanes.get(i);
            LaneSelector.Lane sel = l.selection;
            sel.iface().connect(sel.remote().deviceAddress(), sel.remote().ifaceAddress(),
                    new LaneInboundHandler(endpoint.worker(), endpoint, i)).addListener((ChannelFutureListener) f -> {
                        if (!f.isSuccess()) {
                            // The AM lane carries everything still; the peer is reachable through it.
                            endpoint.worker().laneFailed(new WireupException("AM_BW lane " + sel.name() + " of "
                                    + endpoint + " did not connect: " + f.cause(), f.cause()));
                        } else if (!endpoint.isActive()) {
                            f.channel().close();
                        } else {
                            attached(l, f.channel(), true);
                        }
                    });
        }
    }

    /** Our side of a lane is up: announce it (the dialler) and use it. */
    void attached(Lane l, Channel ch, boolean announce) {
        l.attach(ch);
        distributor.joined(lanes, l);
        if (announce) {
            WireupAuth auth = endpoint.worker().auth();
            ch.writeAndFlush(WireupMessage.laneAttach(endpoint.endpointId(), endpoint.remoteEndpointId(), l.index,
                    endpoint.worker().uuid(), l.selection.local().transport(), auth == null ? null
                            : auth.laneProof(endpoint.worker().uuid(), endpoint.remoteWorkerAddress().uuid(),
                            endpoint.endpointId(), endpoint.remoteEndpointId(), l.index)).toFrame(ch.alloc()),
                    ch.voidPromise());
        }
        if (reliability != null) {
            reliability.joined(l);
        }
    }

    /**
     * The peer dialled lane {@code index} (an AM_BW lane, or a replacement after a failover) and announced it on
     * {@code ch}, naming its transport. The dialler's list is the pair's: our own limits may have chosen another lane
     * at that index, or none.
     */
    void onAttach(int index, String transport, Channel ch, Iface acceptedBy) {
        if (index == 0 || index > MAX_LANES) {
            throw new ProtocolException("LANE_ATTACH for lane " + index + " of " + endpoint);
        }
        LaneSelector.Lane sel = endpoint.worker().laneTo(endpoint.remoteWorkerAddress(), transport, acceptedBy);
        if (sel == null) {
            throw new ProtocolException("LANE_ATTACH over " + transport + ", which " + endpoint.worker().name()
                    + " cannot use to " + endpoint.remoteWorkerAddress().name());
        }
        ensure(index - 1); // lanes before it the peer dialled and lost before their LANE_ATTACH reached us
        if (index < lanes.size()) {
            Lane l = lanes.get(index);
            if (l.isLost()) {
                ch.close(); // given up already (the peer's LANE_FAILED came first): this lane is not used
                return;
            }
            if (l.state() != Lane.State.UNATTACHED) {
                throw new ProtocolException("LANE_ATTACH for lane " + index + " of " + endpoint
                        + ", which is attached already");
            }
            if (!sel.name().equals(l.name())) {
                l = new Lane(index, sel); // NUCX_MAX_RNDV_LANES and the ratio are each side's own
                lanes.set(index, l);
            }
            attached(l, ch, false);
            return;
        }
        Lane l = new Lane(index, sel); // an AM_BW lane our limits did not choose, or a failover replacement
        lanes.add(l);
        attached(l, ch, false);
    }

    // ------------------------------------------------------------ writing

    /** Sends {@code frame} on its lane (or holds it during a failover); the promise completes as the class says. */
    void write(AmFrame frame, ChannelPromise promise) {
        if (reliability != null && reliability.holding()) {
            reliability.hold(frame, promise);
            return;
        }
        Lane l = distributor.next(lanes, lanes.get(am), frame);
        if (frame.amId() == AmIds.RNDV_DATA) {
            l.dataBytes += frame.payload().readableBytes();
            if (lanes.size() > 1) {
                // Done on this lane when written (or, tracking, confirmed); the send's last fragment waits for all.
                ChannelPromise onLane = endpoint.newPromise();
                sendOne(l, frame, onLane);
                l.lastData = onLane;
                if (!promise.isVoid()) {
                    completeAfterData(promise);
                }
                return;
            }
        }
        sendOne(l, frame, promise);
    }

    private void sendOne(Lane l, AmFrame frame, ChannelPromise promise) {
        if (reliability != null) {
            reliability.track(l, frame, promise);
        } else {
            writeThrough(l.channel(), frame, promise);
        }
    }

    /**
     * Writes and flushes {@code frame} straight onto the live lane carrying AM traffic, neither kept for confirmation
     * nor held behind a failover: an ending endpoint's last words. Fails when no lane is left.
     */
    ChannelFuture writeDirect(AmFrame frame) {
        Lane l = target();
        if (l == null) {
            frame.release();
            return endpoint.newFailedFuture(endpoint.failure() != null ? endpoint.failure()
                    : new ClosedChannelException());
        }
        return l.channel().writeAndFlush(frame);
    }

    /**
     * Whether {@link #writeShort} could take anything: no failover, and an AM lane whose transport writes short
     * records (shm, self) or whose framing writes short frames now (tcp: {@link ShortFrameWriter}). A sender that
     * tries a short write first asks this before the rest of its checks.
     */
    boolean takesShortWrites() {
        if (reliability != null) {
            return false;
        }
        Lane l = lanes.get(am);
        return l.channel() instanceof AbstractLaneChannel direct ? direct.writesShortRecords()
                : l.shortWriter() != null;
    }

    /**
     * A short frame (see {@link EndpointChannel#writeShortToLane}) straight into the AM lane's transport, or false.
     * Not with failover: its frames are kept until confirmed, which needs the frame. {@code flushNow}: a flush follows
     * at once (a {@code writeAndFlush}), so the lane publishes it before the send's remaining work, not after.
     */
    boolean writeShort(int amId, long header, ByteBuf payload, ChannelPromise promise,
                       boolean flushNow) {
        if (reliability != null) {
            return false;
        }
        Lane l = lanes.get(am);
        Channel ch = l.channel();
        if (ch instanceof AbstractLaneChannel direct) {
            if (!direct.writeShortNow(amId, header, payload)) {
                return false;
            }
            if (flushNow) {
                direct.flushNow(); // the caller's flush follows: the peer may see it now
            }
        } else {
            // Into the lane's outbound buffer behind whatever it holds: the order of its frames is kept.
            ChannelHandlerContext writer = l.shortWriter();
            if (writer == null || !ch.eventLoop().inEventLoop()
                    || !((ShortFrameWriter) writer.handler()).writeShort(writer, amId, header, payload)) {
                return false;
            }
            if (flushNow) {
                ch.flush();
            }
        }
        promise.trySuccess();
        return true;
    }

    /** Writes {@code frame} on {@code ch}, the promise completing from the lane's write. */
    private void writeThrough(Channel ch, AmFrame frame, ChannelPromise promise) {
        if (ch instanceof AbstractLaneChannel direct && direct.writeNow(frame)) {
            // In the transport now: done, as a lane's own write completes once in the transport. Its listeners may
            // write again from here; Netty's promises bound that nesting (deeper ones run as tasks).
            promise.trySuccess();
            return;
        }
        if (promise.isVoid()) {
            ch.write(frame, ch.voidPromise());
            return;
        }
        ch.write(frame, new LaneWrite(ch, promise));
    }

    /**
     * A write on a lane whose completion completes the send's promise ({@link #complete}): the lane's promise and its
     * own listener, one object where a promise and a listener were two (a lane that cannot take the frame at once,
     * as tcp's under backpressure, went through here for every message).
     */
    private final class LaneWrite extends DefaultChannelPromise implements ChannelFutureListener {
        private final ChannelPromise send;

        LaneWrite(Channel lane, ChannelPromise send) {
            super(lane);
            this.send = send;
            addListener(this);
        }

        @Override
        public void operationComplete(ChannelFuture written) {
            complete(written, send);
        }
    }

    /**
     * A send's promise from its lane write. A failed write fails it with the endpoint's failure: a lane whose channel
     * fails its writes before it goes inactive (rdma fails the writes of a dead queue pair first; a lane that refuses
     * a frame tells its pipeline, whose handler closes it) is about to fail the endpoint, so the send waits for that
     * (or for the close) and reports the endpoint's cause, as every other outstanding operation does.
     */
    private void complete(Future<?> lane, ChannelPromise promise) {
        if (lane.isSuccess()) {
            promise.trySuccess();
            return;
        }
        Throwable why = endpoint.failure();
        if (why != null || !endpoint.isOpen()) {
            promise.tryFailure(why != null ? why : laneCause(lane));
            return;
        }
        endpoint.errorFuture().addListener(f -> {
            Throwable cause = endpoint.failure();
            promise.tryFailure(cause != null ? cause : laneCause(lane));
        });
    }

    /**
     * Why a lane's write failed, as the send reports it when its endpoint closed rather than failed: Netty's closed
     * channel says nothing, so its lane and endpoint are named.
     */
    private Throwable laneCause(Future<?> lane) {
        Throwable c = lane.cause();
        if (EndpointChannel.saysNothing(c)) {
            return new NucxClosedException((lane instanceof ChannelFuture f ? "lane " + f.channel() : "a lane") + " of "
                    + endpoint + " closed before this write went out", c);
        }
        return c;
    }

    /** The send's last fragment: done when every lane has written its last fragment. */
    private void completeAfterData(ChannelPromise promise) {
        PromiseCombiner all = new PromiseCombiner(endpoint.eventLoop());
        for (Lane l : lanes) {
            if (l.lastData != null && !l.lastData.isDone()) {
                all.add(l.lastData);
            }
        }
        Promise<Void> done = endpoint.eventLoop().newPromise();
        done.addListener(f -> complete(f, promise));
        all.finish(done);
    }

    void flush() {
        for (int i = 0, n = lanes.size(); i < n; i++) { // by index: an iterator per flush is an object per message
            Lane l = lanes.get(i);
            if (l.state() == Lane.State.ACTIVE
                    && !(l.channel() instanceof AbstractLaneChannel direct && direct.flushNow())) {
                l.channel().flush();
            }
        }
    }

    /** Whether the AM lane can take more (the endpoint's writability follows it). */
    boolean isWritable() {
        Channel ch = amChannel();
        return ch == null || ch.isWritable();
    }

    /** Whether a live lane holds frames of the peer's this side's loop has not read yet (see keepalive). */
    boolean peerFramesWaiting() {
        for (Lane l : lanes) {
            if (l.peerFramesWaiting()) {
                return true;
            }
        }
        return false;
    }

    /**
     * Each lane's flow as this side sees it (writable or how much waits, reading or paused, what its transport holds),
     * for a keepalive timeout's message: whether the peer fell silent or this side stopped reading. Loop only.
     */
    String flowState() {
        StringJoiner all = new StringJoiner("; ");
        for (Lane l : lanes) {
            Channel ch = l.channel();
            if (ch == null) {
                continue;
            }
            StringBuilder s = new StringBuilder(l.name()).append(": ");
            if (!ch.isActive()) {
                all.add(s.append("closed"));
                continue;
            }
            s.append(ch.isWritable() ? "writable" : "not writable, " + ch.bytesBeforeWritable() + " B to drain");
            if (!ch.config().isAutoRead()) {
                s.append(", reading paused");
            }
            String held = LaneBacklog.transportState(ch);
            all.add(held.isEmpty() ? s : s.append(", ").append(held));
        }
        return all.length() == 0 ? "no lane connected" : all.toString();
    }

    // ------------------------------------------------------------ inbound bookkeeping

    /**
     * A frame other than wireup arrived on the lane whose handler is {@code from}: counted for the peer's confirmation
     * (failover). Without failover nothing is counted, and the lane is not even looked up.
     */
    void received(LaneInboundHandler from) {
        Lane lane;
        if (reliability != null && (lane = from.lane()) != null) {
            lane.heard = true; // failover's keepalive: this lane is alive
            reliability.received(lane);
        }
    }

    /** A read batch ended on {@code ch}, {@code from}'s channel: confirm what arrived (failover). */
    void readBatchEnded(LaneInboundHandler from, Channel ch) {
        Lane lane;
        if (reliability != null && (lane = from.lane()) != null) {
            reliability.readBatchEnded(lane, ch);
        }
    }

    /**
     * {@code lane} went inactive. Returns whether the endpoint goes on over the others (error mode failover); false
     * means the endpoint fails.
     */
    boolean laneLost(Lane lane) {
        return reliability != null && reliability.laneLost(lane);
    }

    /**
     * The peer's graceful EP_REMOVED arrived on {@code on}. It goes on every lane, behind what each carries, so with
     * several live lanes the peer's close counts once it has arrived on all of them: rendezvous data still coming on
     * an AM_BW lane is not cut off by an EP_REMOVED that overtook it on another.
     */
    boolean removedOnEveryLane(Channel on) {
        List<Channel> live = liveChannels();
        if (live.size() <= 1 || !live.contains(on)) {
            return true;
        }
        if (removedOn == null) {
            removedOn = new HashSet<>();
        }
        removedOn.add(on);
        return removedOn.containsAll(live);
    }

    // ------------------------------------------------------------ RMA and AMO lanes

    /** The endpoint's p2p connections, made on first use. */
    P2pConnections p2p() {
        if (p2p == null) {
            p2p = new P2pConnections(endpoint);
        }
        return p2p;
    }

    /**
     * The RMA lanes (rails) lane selection chose, the kernel permits and both sides' entries give {@code capability},
     * whose channel is active: p2p ones once wireup connected them, the others connected on first use. Best first.
     */
    @SuppressWarnings("unchecked")
    List<RmaRail> rmaRails(Capability capability) {
        List<RmaRail> kept = (List<RmaRail>) railsBy[capability.ordinal()];
        if (kept != null && allActive(kept)) {
            return kept;
        }
        List<RmaRail> out = new ArrayList<>(selection.rmaLanes().size());
        boolean every = true;
        for (LaneSelector.RmaLane sel : selection.rmaLanes()) {
            if (sel.local().has(capability) && sel.remote().has(capability)) {
                RmaLane lane = rmaChannel(sel);
                if (lane != null) {
                    out.add(new RmaRail(lane, sel.localIndex(), sel.remoteIndex(), sel.bandwidth(), sel.name()));
                } else {
                    every = false; // not connected yet, or gone: asked again next time
                }
            }
        }
        List<RmaRail> rails = List.copyOf(out);
        railsBy[capability.ordinal()] = every ? rails : null;
        return rails;
    }

    private static boolean allActive(List<RmaRail> rails) {
        for (int i = 0; i < rails.size(); i++) {
            if (!rails.get(i).lane().channel().isActive()) {
                return false;
            }
        }
        return true;
    }

    /** The local devices of the selected RMA lanes with {@code capability} on both sides, as memory domains. */
    @SuppressWarnings("unchecked")
    List<MemoryDomain> memoryDomains(Capability capability) {
        List<MemoryDomain> kept = (List<MemoryDomain>) domainsBy[capability.ordinal()];
        if (kept != null) {
            return kept;
        }
        List<MemoryDomain> out = new ArrayList<>(selection.rmaLanes().size());
        for (LaneSelector.RmaLane sel : selection.rmaLanes()) {
            if (sel.local().has(capability) && sel.remote().has(capability)
                    && sel.iface() instanceof RmaIface domain) {
                out.add(new MemoryDomain(sel.localIndex(), domain, sel.name()));
            }
        }
        kept = List.copyOf(out);
        domainsBy[capability.ordinal()] = kept;
        return kept;
    }

    /** The AMO lane (device atomics), connected; null when the selection has none or it is not connected. */
    RmaRail amoRail() {
        LaneSelector.RmaLane sel = selection.amo();
        RmaLane lane = sel == null ? null : rmaChannel(sel);
        return lane == null ? null : new RmaRail(lane, sel.localIndex(), sel.remoteIndex(), sel.bandwidth(),
                sel.name());
    }

    /** Why {@link #rmaRails} is empty for {@code capability}, in words for an error; null when it is not. */
    String noRmaLaneReason(Capability capability) {
        if (selection.rmaLanes().isEmpty()) {
            return selection.rmaRefusal() != null ? "no RMA lane to this peer: " + selection.rmaRefusal()
                    : "no transport offers RMA (" + capability + ") on both sides; this endpoint's lanes are "
                    + selection.describe();
        }
        List<String> why = new ArrayList<>();
        for (LaneSelector.RmaLane sel : selection.rmaLanes()) {
            if (!sel.local().has(capability) || !sel.remote().has(capability)) {
                why.add(sel.name() + " lacks " + capability + (sel.local().has(capability) ? " at the peer" : " here"));
            } else if (rmaChannel(sel) == null) {
                why.add(sel.name() + (sel.p2p() && endpoint.remoteEndpointId() == WireupMessage.INVALID_EP_ID
                        ? " is not connected yet (wireup has not finished)" : " is not connected (its connection "
                        + "failed or closed)"));
            } else {
                return null;
            }
        }
        return "no usable RMA lane to this peer: " + String.join("; ", why);
    }

    /** The channel of an RMA or AMO lane as an {@link RmaLane}, when it is active; connects iface lanes on first use. */
    private RmaLane rmaChannel(LaneSelector.RmaLane sel) {
        Channel ch;
        if (sel.p2p()) {
            ch = p2p().channel(sel.pair());
        } else {
            ch = rmaChannels.get(sel.pair());
            if (ch == null) {
                ChannelFuture f = sel.iface().connect(sel.remote().deviceAddress(), sel.remote().ifaceAddress(),
                        new RmaLaneHandler(endpoint.worker(), sel.name() + " of " + endpoint));
                if (!f.isSuccess()) { // an RMA lane registers at once on our own loop, or not at all
                    return null;
                }
                ch = f.channel();
                rmaChannels.put(sel.pair(), ch);
            }
        }
        return ch instanceof RmaLane lane && ch.isActive() ? lane : null;
    }

    // ------------------------------------------------------------ end

    /** The endpoint ended: frames kept or held for failover fail with {@code cause}. */
    void releaseAll(Throwable cause) {
        if (reliability != null) {
            reliability.releaseAll(cause);
        }
    }

    /** What a graceful close waits for here (failover: confirmations, a failover in progress). */
    void collectOutstanding(List<Future<?>> out) {
        if (reliability != null) {
            reliability.collectOutstanding(out);
        }
    }

    /** The channels of every live message lane. */
    List<Channel> liveChannels() {
        List<Channel> out = new ArrayList<>();
        for (Lane l : lanes) {
            if (l.live()) {
                out.add(l.channel());
            }
        }
        return out;
    }

    /** Closes every message lane except the AM lane. */
    void closeBwLanes() {
        Channel amCh = amChannel();
        for (Lane l : lanes) {
            if (l.channel() != null && l.channel() != amCh) {
                l.channel().close();
            }
        }
    }

    /** Wireup's own lane: the one this endpoint connected to carry its REQUEST; kept until the lanes close. */
    void ownLane(Channel ch) {
        ownLane = ch;
        keepUntilClose(ch);
    }

    Channel ownLane() {
        return ownLane;
    }

    /** Keeps {@code ch}, a channel wireup no longer needs, open until the endpoint's lanes close. */
    void keepUntilClose(Channel ch) {
        if (ch != null && !auxiliary.contains(ch)) {
            auxiliary.add(ch);
        }
    }

    /** Closes what {@link #keepUntilClose} kept, unless it became a lane. */
    void closeAuxiliary() {
        for (Channel ch : auxiliary) {
            if (laneOf(ch) == null) {
                ch.close();
            }
        }
        if (p2p != null) {
            p2p.close(amChannel());
        }
    }

    /** Closes the RMA and AMO lanes that are not the AM lane; their operations in progress are cancelled. */
    void closeRma() {
        for (Channel ch : rmaChannels.values()) {
            ch.close();
        }
        if (p2p != null) {
            p2p.close(amChannel());
        }
    }

    /** "transport/device" of each message lane in use, the AM lane first; lost lanes are left out. */
    List<String> names() {
        List<String> out = new ArrayList<>();
        out.add(am().name());
        for (Lane l : lanes) {
            if (l != am() && l.state() == Lane.State.ACTIVE) {
                out.add(l.name());
            }
        }
        return out;
    }

    /** RNDV_DATA payload bytes written on each lane, by lane index; for tests and diagnostics. */
    long[] dataBytes() {
        long[] out = new long[lanes.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = lanes.get(i).dataBytes;
        }
        return out;
    }

    /** Frames kept for confirmation, all lanes; for tests. */
    int unconfirmed() {
        return reliability == null ? 0 : reliability.unconfirmed();
    }

    /** Whether writes are held while a failover runs. */
    boolean holding() {
        return reliability != null && reliability.holding();
    }
}
