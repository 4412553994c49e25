package io.nucx.wireup;

import io.netty.channel.Channel;
import io.netty.channel.ChannelPromise;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import io.netty.util.concurrent.PromiseCombiner;
import io.netty.util.concurrent.ScheduledFuture;
import io.nucx.ConnectionResetException;
import io.nucx.EndpointErrorEvent;
import io.nucx.EndpointException;
import io.nucx.EndpointTimeoutException;
import io.nucx.ErrorMode;
import io.nucx.NucxClosedException;
import io.nucx.protocol.ProtocolCodec;
import io.nucx.transport.AmFrame;
import io.nucx.transport.PayloadPlacement;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * An endpoint's lifecycle, decided here alone (Aeron's {@code NetworkPublication} is the model): one state, and
 * every rule that ends an endpoint or keeps part of it alive.
 * <pre>
 *   WIRING_UP ──lanes ready──▶ CONNECTED ──close()──▶ DRAINING ──sends answered, or the bound──▶ CLOSING
 *       │                          │                     │                                          │
 *       └──────────────── failure ─┴─────────────────────┴──── the peer closed, or the bound ──────┤
 *                                                                                                   ▼
 *                                         LINGER ◀── a codec still waits for the peer's last word ── end
 *                                           └── that word and the peer's goodbye, its exit, or park ─▶ CLOSED
 * </pre>
 * <ul>
 *   <li>WIRING_UP: writes wait in the {@link StubHandler} while the {@link WireupHandler} connects the lanes.</li>
 *   <li>DRAINING: a graceful close waits (at most NUCX_KEEPALIVE_TIMEOUT) for what the codecs and lanes still owe the
 *       peer.</li>
 *   <li>CLOSING: EP_REMOVED went out behind everything written, on every lane; the peer closes its side (or the
 *       bound passes). Closing first could drop what an in-process lane still holds for the peer.</li>
 *   <li>LINGER: the channel is closed for the user and its pipeline gone, but a codec still expects the peer's last
 *       word on memory the peer may be writing into (rendezvous PUT, {@code RndvReceiver}): the lanes stay open and
 *       what they bring goes to {@link ProtocolCodec#lingerRead}. A worker that closes waits for it (bounded), then
 *       parks what is held. Also entered when a codec {@linkplain ProtocolCodec#awaitsPeerEnd awaits the peer's end}
 *       (it may still offer a buffer for a send it was announced); either way the lanes close only once the peer's
 *       EP_REMOVED was read (it comes behind any offer), its lane went, or the close bound passed.</li>
 *   <li>CLOSED: lanes closed.</li>
 * </ul>
 * <b>Failure</b> ends the endpoint once: every outstanding operation fails with the {@link EndpointException} (its
 * codec aborts it as its stage says), the {@link EndpointErrorEvent} goes through the pipeline, the error future
 * fails. Loop only.
 */
final class EndpointLifecycle {

    /** Lanes failover's keepalive closed because they went silent (see {@link #closeSilentLanes}). */
    static final String SILENT_LANE_COUNTER = "lane/silent";

    enum State { WIRING_UP, CONNECTED, DRAINING, CLOSING, LINGER, CLOSED }

    private final EndpointChannel ep;
    private final Promise<Void> closed;
    private volatile State state;
    /** Why the endpoint failed, set once; null for a close without failure. */
    private EndpointException failure;
    private static final int ENDED = 0;
    private static final int OPEN = 1;
    private static final int SENDS = 2;
    /**
     * What the user may still do, apart from the state so that a send reads one field: {@link #SENDS}, then
     * {@link #OPEN} once its owner closed it (draining), then {@link #ENDED} from the first step of {@link #end}.
     */
    private volatile int openness = SENDS;
    private ScheduledFuture<?> closeTimer;
    /** The peer said its endpoint ended (EP_REMOVED): nothing it sends after that offers us anything. */
    private boolean peerRemoved;
    /** LINGER with no codec waiting any more: the bound on waiting for the peer's EP_REMOVED. */
    private ScheduledFuture<?> goodbyeTimer;

    EndpointLifecycle(EndpointChannel ep, boolean wiringUp) {
        this.ep = ep;
        this.state = wiringUp ? State.WIRING_UP : State.CONNECTED;
        this.closed = ep.worker().eventLoop().newPromise();
    }

    State state() {
        return state;
    }

    /**
     * Open for the user: not yet ending. Any thread. Closed from the first step of {@link #end}, before its state
     * changes: a send issued from a listener of one the end fails runs inside the end, after the codecs before its
     * own have aborted, and must fail rather than be registered where no abort comes again.
     */
    boolean isOpen() {
        return openness != ENDED;
    }

    /**
     * Whether it takes new sends: open, and not closed by its owner. A graceful close drains what came before it, and
     * a send after it would go behind the goodbye, which the peer ends its side on. Any thread.
     */
    boolean takesSends() {
        return openness == SENDS;
    }

    /** Why the endpoint failed, or null. */
    EndpointException failure() {
        return failure;
    }

    /** Whether it has ended (lingering or closed). */
    boolean ended() {
        return state.compareTo(State.CLOSING) > 0;
    }

    /** The one place the state changes. */
    private void transition(State to) {
        assert ep.worker().eventLoop().inEventLoop();
        State from = state;
        boolean allowed = switch (to) {
            case WIRING_UP -> false;
            case CONNECTED -> from == State.WIRING_UP;
            case DRAINING -> from == State.CONNECTED;
            case CLOSING -> from == State.DRAINING;
            case LINGER -> from != State.LINGER && from != State.CLOSED;
            case CLOSED -> from != State.CLOSED;
        };
        if (!allowed) {
            throw new IllegalStateException(ep + ": " + from + " -> " + to);
        }
        state = to;
        if (to == State.DRAINING || to == State.CLOSING) {
            openness = Math.min(openness, OPEN);
        } else if (to == State.LINGER || to == State.CLOSED) {
            openness = ENDED;
        }
        switch (to) {
            case LINGER -> ep.worker().lingering(ep, true);
            case CLOSED -> {
                ep.worker().lingering(ep, false);
                closed.trySuccess(null);
            }
            default -> {
            }
        }
    }

    /** Wireup connected the pair's AM lane. */
    void connected() {
        transition(State.CONNECTED);
    }

    /**
     * Fails the endpoint once: outstanding operations fail with {@code cause} and release their buffers (in the
     * close), the error event fires, the error future fails.
     */
    void fail(EndpointException cause) {
        if (failure != null || ended()) {
            return;
        }
        failure = cause;
        ep.worker().endpointFailed(cause);
        ep.wireupFailed(cause);
        closeNow();
        if (ep.isRegistered()) {
            ep.pipeline().fireUserEventTriggered(new EndpointErrorEvent(cause));
        }
        ep.errorPromise().tryFailure(cause);
    }

    private void closeNow() {
        ep.unsafe().close(ep.unsafe().voidPromise());
    }

    /**
     * The graceful close, from the {@link LaneDispatcher} when a close passes it: waits for what the codecs and lanes
     * still owe the peer (at most NUCX_KEEPALIVE_TIMEOUT), then writes EP_REMOVED behind everything on every lane and
     * waits (as long again at most) for the peer to close. {@code promise} completes when the endpoint is closed.
     */
    void closeGracefully(ChannelPromise promise) {
        ep.worker().endpointClosing(ep); // a handler's ctx.close() comes here without the channel's close()
        if (failure == null && (state == State.DRAINING || state == State.CLOSING)) {
            // Closed again (its owner, then its worker's close): ending it now would cut the graceful close short and
            // fail what it waits for; this close completes with that one, which is bounded.
            ep.closeFuture().addListener(f -> promise.trySuccess());
            return;
        }
        EndpointLanes lanes = ep.lanes();
        Channel am = lanes.amChannel();
        if (failure != null || state != State.CONNECTED || am == null || (!am.isActive() && !lanes.holding())) {
            ep.unsafe().close(promise);
            return;
        }
        transition(State.DRAINING);
        ep.closeFuture().addListener(f -> promise.trySuccess());
        List<Future<?>> waits = new ArrayList<>();
        for (ProtocolCodec c : ep.codecs()) {
            c.collectOutstanding(waits);
        }
        lanes.collectOutstanding(waits);
        if (waits.isEmpty()) {
            sayGoodbye();
            return;
        }
        Promise<Void> all = ep.eventLoop().newPromise();
        // The bound first: whatever happens below, a DRAINING endpoint says goodbye in the end.
        Future<?> bound = ep.eventLoop().schedule(() -> all.trySuccess(null), ep.closeWaitNanos(),
                TimeUnit.NANOSECONDS);
        all.addListener(f -> {
            bound.cancel(false);
            sayGoodbye(); // a failed send is the caller's to see on its own future; the close goes on
        });
        PromiseCombiner combiner = new PromiseCombiner(ep.eventLoop());
        for (Future<?> w : waits) {
            if (w instanceof ChannelPromise p && p.isVoid()) {
                // A codec's bug (a void promise cannot be listened to): name it rather than hang the close
                throw new IllegalStateException("a graceful close cannot wait for a void promise: " + waits);
            }
            combiner.add(w);
        }
        combiner.finish(all);
    }

    private void sayGoodbye() {
        Channel am = ep.lanes().amChannel(); // a failover may have moved it
        if (state != State.DRAINING || am == null || !am.isActive()) {
            closeNow();
            return;
        }
        transition(State.CLOSING);
        // On every lane, behind what each carries: the peer acts once it has read it on all of them.
        for (Channel ch : ep.lanes().liveChannels()) {
            sayGoodbyeOn(ch);
        }
        closeTimer = ep.eventLoop().schedule(this::closeNow, ep.closeWaitNanos(), TimeUnit.NANOSECONDS);
    }

    private void sayGoodbyeOn(Channel ch) {
        ch.writeAndFlush(WireupMessage.epRemoved(ep.endpointId(), ep.remoteEndpointId(), "endpoint #"
                + ep.endpointId() + " of " + ep.localAddress() + " closed by its owner").toFrame(ch.alloc()),
                ch.voidPromise());
    }

    /**
     * The peer attached lane {@code ch} (its LANE_ATTACH crossed our close): once this side has said goodbye, the new
     * lane hears it too. The peer acts on a graceful EP_REMOVED only once every lane of its own has brought one, so
     * without it the peer would wait for the lane's close, and take that for a reset.
     */
    void laneAttached(Channel ch) {
        if (state == State.CLOSING && ch.isActive()) {
            sayGoodbyeOn(ch);
        }
    }

    /** The peer sent EP_REMOVED on {@code on}: it closed this endpoint's other side, or does not know it. */
    void remoteRemoved(String reason, Channel on, boolean graceful) {
        if (graceful && !ep.lanes().removedOnEveryLane(on)) {
            return; // the peer's close is behind what its other lanes still carry: read those first
        }
        peerRemoved = true;
        if (state == State.LINGER) {
            lingerEnded(); // the goodbye it may have been waiting for
            return;
        }
        if (state == State.CLOSING || graceful && state == State.DRAINING) {
            // Both sides said goodbye: nothing more will come either way. Still draining, this side's close waited for
            // acknowledgements the peer, gone by its own close, no longer gives (the end of a stream it will not
            // read): a close, not a reset; what this side still had fails as a close's.
            closeNow();
            return;
        }
        fail(new ConnectionResetException(ep.endpointId(), ep.remoteAddress(), "the peer removed its endpoint: "
                + reason, null));
    }

    /**
     * A lane went inactive. Unless this endpoint closed it, or failover replaces it, that is a failure: the peer's
     * process or connection went ({@code laneCause} null or an I/O error: {@link ConnectionResetException}), or a
     * frame broke the protocol.
     */
    void laneInactive(Channel ch, Throwable laneCause) {
        WireupHandler w = ep.wireup();
        if (w != null && w.laneInactive(ch, laneCause)) {
            return;
        }
        Lane lane = ep.lanes().laneOf(ch);
        if (lane != null && state == State.LINGER) {
            lingerEnded(); // the peer's side is gone with its lane: no goodbye will come on it
            return;
        }
        if (lane == null || ended()) {
            return; // a lane dropped after a simultaneous connect or the p2p auxiliary lane; or the end is known
        }
        if ((state == State.CONNECTED || state == State.DRAINING) && failure == null && ep.lanes().laneLost(lane)) {
            return; // error mode failover: the endpoint goes on over the lanes left
        }
        if (state != State.CLOSING) {
            fail(laneFailure(lane.name(), laneCause));
        }
        closeNow();
    }

    EndpointException laneFailure(String lane, Throwable laneCause) {
        if (laneCause == null) {
            return new ConnectionResetException(ep.endpointId(), ep.remoteAddress(), "the peer closed the " + lane
                    + " connection (its process exited or was killed)", null);
        }
        if (laneCause instanceof IOException) {
            return new ConnectionResetException(ep.endpointId(), ep.remoteAddress(), "the " + lane + " connection "
                    + "failed (peer process gone or network lost): " + laneCause, laneCause);
        }
        return new EndpointException(ep.endpointId(), ep.remoteAddress(), "the " + lane + " lane was closed after an "
                + "error: " + laneCause, laneCause);
    }

    /** Both ends of a pair must handle errors alike; a pair of {@code connect}s in two modes fails, naming both. */
    boolean failsOnModeMismatch(WireupMessage m) {
        ErrorMode theirs = m.errorMode();
        if (theirs == ep.errorMode()) {
            return false;
        }
        fail(new EndpointException(ep.endpointId(), ep.remoteAddress(), "error mode mismatch: this side connected in "
                + "error mode " + ep.errorMode().name().toLowerCase(Locale.ROOT) + ", the peer in "
                + theirs.name().toLowerCase(Locale.ROOT) + "; both sides must use the same (NUCX_ERR_MODE)", null));
        return true;
    }

    /**
     * One keepalive tick (error modes peer and failover): fail after NUCX_KEEPALIVE_TIMEOUT without a frame from the
     * peer, otherwise send EP_CHECK on the AM lane. Before the REPLY there is no id to check, but silence still counts,
     * so a peer that never answers the REQUEST fails the endpoint too.
     */
    void keepaliveTick(Keepalive keepalive, PeerLiveness liveness) {
        if (ep.errorMode() == ErrorMode.NONE || failure != null || ended()) {
            return;
        }
        if (ep.errorMode() == ErrorMode.FAILOVER && closeSilentLanes(keepalive)) {
            liveness.heard(); // what is left (another lane, or the replacement) gets a whole timeout to be heard
        }
        LaneSelector.Lanes sel = ep.selection();
        Channel am = ep.lanes().amChannel();
        if (!liveness.heardSinceTick() && ep.lanes().peerFramesWaiting()) {
            // The peer spoke; this loop was kept from its I/O (an application's tasks queuing one another run for up
            // to Netty's task quantum and 64 more) and has not read it yet. Silence is the peer's, not ours. Asked
            // only of a silent tick: over tcp it is a system call per lane.
            liveness.heard();
        }
        if (keepalive.tick(liveness) == Keepalive.Verdict.EXPIRED) {
            fail(new EndpointTimeoutException(ep.endpointId(), ep.remoteAddress(), "no answer from the peer for "
                    + Duration.ofNanos(keepalive.timeoutNanos()) + " (NUCX_KEEPALIVE_TIMEOUT) on "
                    + (sel.keepalive() != null ? sel.keepalive().name() : sel.am().name())
                    + (am == null ? ", lane never connected"
                    : ep.remoteEndpointId() == WireupMessage.INVALID_EP_ID ? ", no REPLY to the wireup REQUEST" : "")
                    + ": the peer is hung, stopped or unreachable (this side: " + ep.lanes().flowState() + ")"));
            return;
        }
        // An unwritable lane already holds frames for the peer; a probe behind them tells it nothing sooner.
        if (am != null && ep.remoteEndpointId() != WireupMessage.INVALID_EP_ID && am.isActive() && am.isWritable()) {
            am.writeAndFlush(WireupMessage.epCheck(ep.errorMode(), ep.endpointId(), ep.remoteEndpointId())
                    .toFrame(am.alloc()), am.voidPromise());
        }
    }

    /**
     * Error mode failover: a lane that stayed silent for NUCX_KEEPALIVE_TIMEOUT while it had work (the AM lane, which
     * carries EP_CHECK both ways, or one with frames awaiting LANE_ACK) is on a network that went away without a word
     * (a cable, a link down, an interface removed: TCP itself would retry for minutes). It is closed here, so that
     * failover moves the endpoint to the lanes left or to a replacement on another device; the endpoint fails only if
     * that finds no way, or if the peer stays silent for another timeout. Returns whether a lane was closed.
     */
    private boolean closeSilentLanes(Keepalive keepalive) {
        if (state != State.CONNECTED || failure != null || ep.remoteEndpointId() == WireupMessage.INVALID_EP_ID
                || ep.lanes().holding()) {
            return false;
        }
        Lane am = ep.lanes().am();
        boolean closed = false;
        for (Lane l : ep.lanes().all()) {
            // Frames of the peer's waiting unread on it: this loop was kept from its I/O, the lane is not silent.
            if (!l.live() || l.heard || l != am && l.unconfirmed.isEmpty() || l.peerFramesWaiting()) {
                l.heard = false;
                l.silentTicks = 0;
            } else if (++l.silentTicks >= keepalive.ticksToExpire()) {
                l.silentTicks = 0;
                ep.worker().counters().counter(SILENT_LANE_COUNTER).increment();
                l.channel().close(); // its channelInactive runs failover (laneInactive -> laneLost)
                closed = true;
            }
        }
        return closed;
    }

    /** The reaper found every lane closed, some not yet deregistered, and gave them a tick. */
    private boolean reapDeferred;

    /**
     * The worker's reaper: a connected endpoint none of whose lanes is open any more fails (its lanes' closes should
     * have failed it; this makes sure nothing outlives its lanes, in any error mode).
     */
    void reapIfLanesGone() {
        if (state != State.CONNECTED && state != State.DRAINING) {
            return;
        }
        if (ep.lanes().holding() || !ep.lanes().liveChannels().isEmpty()) {
            return;
        }
        boolean inactivePending = false;
        for (Lane l : ep.lanes().all()) {
            if (l.channel() != null && l.channel().isOpen()) {
                return;
            }
            inactivePending |= l.channel() != null && l.channel().isRegistered();
        }
        // Closed but still registered: the lane's channelInactive, which tells this endpoint why (naming the lane),
        // may still be queued on the loop. That is the lane's close to report: the reaper waits one tick for it, and
        // one only (a lane that never deregisters must not keep its endpoint alive).
        if (inactivePending && !reapDeferred) {
            reapDeferred = true;
            return;
        }
        fail(new ConnectionResetException(ep.endpointId(), ep.remoteAddress(), "every lane to the peer is closed",
                null));
    }

    /**
     * The end, whatever led here (the channel's {@code doClose}): every request still outstanding is aborted by its
     * codec as its stage says (failed with the endpoint's failure, or for a close with a {@link NucxClosedException}
     * naming the endpoint), then the endpoint lingers if a codec must hear the peer's last word, else its lanes close.
     */
    void end() {
        openness = ENDED;
        State before = state;
        if (closeTimer != null) {
            closeTimer.cancel(false);
        }
        // A close's: what it still had (a graceful close's bound ran out, or the close was not graceful) names it
        Throwable cause = failure != null ? failure : new NucxClosedException(ep + " was closed here (by its owner or "
                + "its worker" + (peerRemoved ? "; its peer removed its side too" : "") + ") before this operation "
                + "completed", null);
        StubHandler stub = ep.pipeline().get(StubHandler.class);
        if (stub != null) {
            stub.fail(cause);
        }
        EndpointLanes lanes = ep.lanes();
        lanes.releaseAll(cause); // first: a codec's last words below must not wait for confirmation
        for (Lane l : lanes.all()) { // before the receives fail: their buffers go back to the user
            Channel ch = l.channel();
            if (ch != null && ch.isRegistered()) {
                ch.pipeline().fireUserEventTriggered(PayloadPlacement.RELINQUISH);
            }
        }
        boolean lingers = false;
        for (ProtocolCodec c : ep.codecs()) {
            c.endpointEnded(cause);
            lingers |= c.lingers() || c.awaitsPeerEnd();
        }
        lanes.closeRma(); // after the codecs: their RMA operations were cancelled, not failed
        ep.wireupFailed(cause);
        if (failure == null) {
            ep.errorPromise().trySuccess(null); // a failure fails it once its event has gone through the pipeline
        }
        ep.worker().endpointClosed(ep, before == State.CLOSING); // the peer was told goodbye: a late lane hears it too
        Channel am = lanes.amChannel();
        if (lingers && am != null && am.isActive()) {
            transition(State.LINGER);
            if (before != State.CLOSING) {
                am.writeAndFlush(WireupMessage.epRemoved(ep.endpointId(), ep.remoteEndpointId(), "endpoint #"
                        + ep.endpointId() + " of " + ep.localAddress() + " ended (" + (failure != null
                        ? failure.getMessage() : "closed") + "); it waits for your last word on rendezvous transfers "
                        + "in progress").toFrame(am.alloc()), am.voidPromise());
            }
            lingerEnded(); // nothing held, only the peer's goodbye awaited: it may be in already
            return;
        }
        closeLanes();
        transition(State.CLOSED);
    }

    /** A frame that arrived while lingering goes to the codecs that linger or await the peer's end. Owns it. */
    void lingerRead(AmFrame frame) {
        for (ProtocolCodec c : ep.codecs()) {
            if (c.lingers() || c.awaitsPeerEnd()) {
                c.lingerRead(frame.retain());
            }
        }
        frame.release();
    }

    /**
     * A codec stopped lingering, the peer said goodbye or a lane went: when no codec lingers any more and the peer has
     * ended its side too, the lanes close. The peer may have offered a buffer for PUT (an RTR with its key) before it
     * read our EP_REMOVED; its own EP_REMOVED comes behind any such offer on the lane, so the lanes stay open (at most
     * the close bound) until it is read. Closed over an unread offer, they would leave the peer holding that buffer
     * until our process exits: only our refusal (ATP cancelled) proves we never write into it.
     */
    void lingerEnded() {
        if (state != State.LINGER) {
            return;
        }
        for (ProtocolCodec c : ep.codecs()) {
            if (c.lingers()) {
                return;
            }
        }
        Channel am = ep.lanes().amChannel();
        if (!peerRemoved && am != null && am.isActive()) {
            if (goodbyeTimer == null) {
                goodbyeTimer = ep.eventLoop().schedule(() -> {
                    peerRemoved = true; // silent for the whole bound: it is not reading
                    lingerEnded();
                }, ep.closeWaitNanos(), TimeUnit.NANOSECONDS);
            }
            return;
        }
        closeLanes();
        transition(State.CLOSED);
    }

    /** The worker closes and stops waiting: what lingers is parked for the life of the JVM, the lanes close. */
    int park() {
        if (state != State.LINGER) {
            return 0;
        }
        int n = 0;
        for (ProtocolCodec c : ep.codecs()) {
            n += c.park();
        }
        closeLanes();
        transition(State.CLOSED);
        return n;
    }

    /** Completes when the endpoint is CLOSED: at its close, or when its linger ends. */
    Future<Void> closedFuture() {
        return closed;
    }

    private void closeLanes() {
        if (goodbyeTimer != null) {
            goodbyeTimer.cancel(false);
        }
        EndpointLanes lanes = ep.lanes();
        lanes.closeBwLanes();
        Channel am = lanes.amChannel();
        if (am != null) {
            am.close();
        }
        lanes.closeAuxiliary();
    }
}
