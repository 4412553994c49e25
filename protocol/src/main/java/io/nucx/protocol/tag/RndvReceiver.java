package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.ChannelHandlerContext;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import io.netty.util.concurrent.PromiseCombiner;
import io.netty.util.internal.logging.InternalLogger;
import io.netty.util.internal.logging.InternalLoggerFactory;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.EndpointConfig;
import io.nucx.protocol.EndpointServices;
import io.nucx.protocol.MemoryBudget;
import io.nucx.protocol.PendingRequests;
import io.nucx.protocol.ProtocolCodec;
import io.nucx.protocol.ProtocolCounters;
import io.nucx.protocol.ProtocolException;
import io.nucx.protocol.RmaRail;
import io.nucx.protocol.RmaTransfer;
import io.nucx.protocol.am.AmHeaders;
import io.nucx.protocol.am.AmIncoming;
import io.nucx.protocol.stream.StreamSlot;
import io.nucx.transport.AmFrame;
import io.nucx.transport.Capability;
import io.nucx.transport.rma.MemoryRegistration;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongPredicate;

/**
 * The receive side of the rendezvous protocols on one endpoint. An RTS is matched when it arrives (a posted receive,
 * the pipeline's order, or the unexpected queue until a receive takes it), then its data come in one of three ways,
 * each a stage of the receive:
 * <ul>
 *   <li>{@link Stage#GET}: the sender offered its buffer's key and this side may read it ({@code rndv/get/zcopy}):
 *       the data are read through the RMA lane, then ATS tells the sender to complete. A failed read asks by RTR.</li>
 *   <li>{@link Stage#RTR_SENT}: RTR asked for RNDV_DATA fragments ({@code tag/rndv}).</li>
 *   <li>{@link Stage#OFFERED}: the receive buffer's key went out in the RTR ({@code rndv/put/zcopy}, NUCX_RNDV_SCHEME
 *       put_zcopy) and the sender writes into it, then says RNDV_ATP.</li>
 *   <li>{@link Stage#HELD}: the endpoint ended while the buffer was offered; {@link Stage#PARKED}: still held
 *       when the worker gave up ({@link #park}).</li>
 * </ul>
 *
 * <p><b>The PUT safety rule.</b> With PUT the peer writes into our memory, and on some transports nothing on this side
 * can stop it (cma: the kernel lets a process of the same user write ours). So an offered receive is neither completed
 * nor failed back to the user, cannot be cancelled, and its buffer is not released until the sender is known not to
 * write into it any more: (1) its RNDV_ATP arrives, any status (written, or cancelled: it will not write); or (2) its
 * RNDV_DATA arrives (the sender falls back to fragments only after its PUT ended or never began); or (3) the
 * registration's {@link MemoryRegistration#revoke() revoke} completes: the transport took the peer's access away
 * (rdma deregisters the region: at once) or the peer's process has exited (cma). The endpoint ending does not end an
 * offered receive: its abort moves it to HELD, with the endpoint's cause, and the endpoint lingers (its LINGER state)
 * with its lanes open, so the peer's last word can still arrive ({@link #lingerRead}); the peer, reading the
 * endpoint's EP_REMOVED, cancels its PUT and answers ATP(cancelled). A worker that closes waits for held receives up
 * to its close bound, then {@link #park parks} them: never completed, buffers never released or reused (kept
 * reachable for the life of the JVM). A stopped or hung peer holds the buffer as long as it stays so; nothing on this
 * side can shorten that, and the memory is what safety costs.
 */
final class RndvReceiver {

    private static final InternalLogger LOG = InternalLoggerFactory.getInstance(RndvReceiver.class);

    /** Receives closing workers of this JVM parked: never completed, their buffers never released. */
    private static final Queue<Object> PARKED = new ConcurrentLinkedQueue<>();

    enum Stage { GET, RTR_SENT, OFFERED, HELD, PARKED }

    /** One rendezvous receive, by receiver request id. */
    private final class Receive {
        final long tag;
        final int total;
        final long senderReqId;
        long id;
        Stage stage;
        /** A {@link TagReceive}, a {@link PipelineSlot}, a {@link StreamSlot}, or null (taken and dropped). */
        Object target;
        /** The whole receive buffer: the user's (in place), or allocated for a GET or a PUT offer; else null. */
        ByteBuf buffer;
        boolean inPlace;
        /** The data of RNDV_DATA fragments: into {@link #buffer}, or copies committed as they arrive. */
        Fragments parts;
        /** Bytes charged to the endpoint's budget: no posted receive owns this one, or its buffer was taken before
         *  its data came. */
        long charged;
        int received;
        /** The GET reading the sender's memory, or null. */
        Get get;
        /**
         * Completes when the GET no longer reads the sender's memory; made only when a graceful close asks to wait for
         * it ({@link #collectOutstanding}), so a read no close waits for costs nothing more.
         */
        Promise<Void> getOver;
        /** The buffer offered for PUT (one registration per device of ours), and the promise a graceful close waits
         *  for, or null. */
        List<MemoryRegistration> offer;
        Promise<Void> offerOver;
        /** Why a HELD receive fails once released: its endpoint ended while it was offered. */
        Throwable heldCause;

        Receive(long tag, int total, long senderReqId) {
            this.tag = tag;
            this.total = total;
            this.senderReqId = senderReqId;
        }

        /** How an error names it ({@link Fragments#add}). */
        @Override
        public String toString() {
            return "receive " + id;
        }
    }

    /** An RTS nobody has received yet: its data wait at the sender. */
    private final class RtsArrival extends TagArrival {
        final long senderReqId;
        final long size;
        /** The sender's keys, unpacked by our RMA lanes when it arrived ({@code rndv/get/zcopy}), or null. */
        final List<RmaTransfer.RailKey> key;

        RtsArrival(long tag, long senderReqId, long size, List<RmaTransfer.RailKey> key) {
            super(tag);
            if (!budget.tryCharge(MemoryBudget.ENTRY_COST)) { // the text only for the error: no string per RTS
                budget.charge(MemoryBudget.ENTRY_COST, "unexpected rendezvous request " + senderReqId + " ("
                        + size + " bytes)");
            }
            this.senderReqId = senderReqId;
            this.size = size;
            this.key = key;
        }

        @Override
        protected void matched(TagReceive r) {
            unexpected.remove(this);
            budget.release(MemoryBudget.ENTRY_COST);
            start(r, tag(), size, senderReqId, key);
        }

        @Override
        protected void discard() {
            if (unexpected.remove(this)) {
                budget.release(MemoryBudget.ENTRY_COST);
            }
        }
    }

    /**
     * An active message's RTS, handed to its handler: the data wait at the sender until the handler asks for them
     * into a buffer of its own ({@link #receiveData}), or lets the message go (ATS: the send completes; or, with no
     * handler for its id, fails).
     */
    private final class AmRts extends AmIncoming {
        final long tag;
        final long senderReqId;
        final long size;
        final List<RmaTransfer.RailKey> key;
        /** Why the data can no longer be asked for: the endpoint ended first. */
        Throwable ended;
        /** Charged to the endpoint's budget while it waits, as an unexpected RTS is. */
        final long charged;

        AmRts(long tag, ByteBuf header, long size, long senderReqId, List<RmaTransfer.RailKey> key,
              long charged) {
            super(tag, header, size);
            this.charged = charged;
            this.tag = tag;
            this.senderReqId = senderReqId;
            this.size = size;
            this.key = key;
        }

        @Override
        public boolean isRendezvous() {
            return true;
        }

        @Override
        protected void receiveData(ByteBuf into, Promise<Void> done) {
            if (ended != null) {
                done.tryFailure(ended);
                return;
            }
            leave(this);
            Promise<TagMessage> received = ctx.executor().newPromise();
            received.addListener(f -> {
                if (f.isSuccess()) {
                    ((TagMessage) f.getNow()).release(); // a slice of the caller's buffer
                    done.trySuccess(null);
                } else {
                    done.tryFailure(f.cause());
                }
            });
            start(new TagReceive(tag, -1L, into, received), tag, size, senderReqId, key);
        }

        @Override
        protected void dropData(Drop why) {
            if (why != Drop.RECEIVED && leave(this)) {
                sendAts(senderReqId, why == Drop.NO_HANDLER ? RndvHeaders.STATUS_NO_HANDLER : RndvHeaders.STATUS_OK);
            }
        }
    }

    private final ChannelHandlerContext ctx;
    private final EndpointServices endpoint;
    private final TagMatcher matcher;
    private final ByteBufAllocator alloc;
    private final long maxMessageSize;
    private final RndvScheme scheme;
    private final LongPredicate toPipeline;
    private final MemoryBudget budget;
    private final PendingRequests<Receive> receives;
    /** This endpoint's RTS waiting in the worker's unexpected queue; they leave it when the endpoint ends. */
    private final Set<RtsArrival> unexpected = new LinkedHashSet<>();
    /** This endpoint's active messages by rendezvous whose data nobody asked for nor let go yet. */
    private final Set<AmRts> amWaiting = new LinkedHashSet<>();
    private final LongAdder getCount;
    private final LongAdder getFallbackCount;
    private final LongAdder putCount;
    private final LongAdder putFallbackCount;
    private final LongAdder putHeldCount;
    private final ProtocolCounters counters;
    private int held;

    RndvReceiver(ChannelHandlerContext ctx, EndpointServices endpoint, TagMatcher matcher, ByteBufAllocator alloc,
                 long maxMessageSize, RndvScheme scheme, ProtocolCounters counters,
                 AtomicInteger inFlight, MemoryBudget budget) {
        this.budget = budget;
        this.ctx = ctx;
        this.receives = new PendingRequests<>(inFlight);
        this.endpoint = endpoint;
        this.matcher = matcher;
        this.alloc = alloc;
        this.maxMessageSize = maxMessageSize;
        this.scheme = scheme;
        this.toPipeline = endpoint::deliversToPipeline;
        this.counters = counters;
        this.getCount = counters.counter(RndvProtocols.RECV_GET_COUNTER);
        this.getFallbackCount = counters.counter(RndvProtocols.RECV_GET_FALLBACK_COUNTER);
        this.putCount = counters.counter(RndvProtocols.RECV_PUT_COUNTER);
        this.putFallbackCount = counters.counter(RndvProtocols.RECV_PUT_FALLBACK_COUNTER);
        this.putHeldCount = counters.counter(RndvProtocols.RECV_PUT_HELD_COUNTER);
    }

    /**
     * RNDV_RTS: match it now, in the order the peer wrote, or keep it unexpected until a receive wants it. STREAM_RTS:
     * its place in the endpoint's stream is taken now (a {@link StreamSlot}), no matching. AM_RTS: its handler gets it
     * now ({@link AmRts}, with the user header {@code payload}: not owned), and asks for the data when it likes.
     */
    void onRts(long tag, long senderReqId, long size, ByteBuf packedKey, MessageKind kind, ByteBuf payload) {
        if (size > maxMessageSize || size < 0) {
            throw new ProtocolException("rendezvous request " + senderReqId + " announces " + size
                    + " bytes; NUCX_MAX_MSG_SIZE allows " + maxMessageSize);
        }
        List<RmaTransfer.RailKey> key = null;
        if (packedKey != null && scheme != RndvScheme.AM && scheme != RndvScheme.PUT_ZCOPY) {
            List<RmaRail> rails = endpoint.rmaRails(Capability.GET_ZCOPY);
            List<RmaTransfer.RailKey> keys = rails.isEmpty() ? List.of()
                    : RndvKeys.unpack(rails, packedKey, size, "RNDV_RTS", senderReqId);
            if (!keys.isEmpty()) {
                key = keys;
            } else {
                getFallbackCount.increment(); // no permitted RMA lane on this side: the sender sends the data
            }
        }
        if (kind == MessageKind.AM) {
            int headerLength = AmHeaders.headerLength(tag);
            if (payload.readableBytes() != headerLength) {
                throw new ProtocolException("AM_RTS " + senderReqId + " carries " + payload.readableBytes()
                        + " header bytes, its tag field says " + headerLength);
            }
            long cost = MemoryBudget.ENTRY_COST + headerLength;
            if (!budget.tryCharge(cost)) {
                budget.charge(cost, "active message " + AmHeaders.id(tag) + " waiting for its handler to receive its "
                        + size + " bytes (rendezvous request " + senderReqId + ")");
            }
            AmRts a = new AmRts(tag, payload.retainedSlice(), size, senderReqId, key, cost);
            amWaiting.add(a);
            ctx.fireChannelRead(a);
            return;
        }
        if (kind == MessageKind.STREAM) {
            StreamSlot slot = new StreamSlot();
            ctx.fireChannelRead(slot);
            start(slot, tag, size, senderReqId, key);
            return;
        }
        TagReceive r = matcher.takeExpected(tag);
        if (r != null) {
            start(r, tag, size, senderReqId, key);
        } else if (toPipeline.test(tag)) {
            PipelineSlot slot = new PipelineSlot();
            ctx.fireChannelRead(slot);
            start(slot, tag, size, senderReqId, key);
        } else {
            RtsArrival a = new RtsArrival(tag, senderReqId, size, key);
            unexpected.add(a);
            matcher.addUnexpected(a);
        }
    }

    /** {@code a} no longer waits (its data were asked for, or it was let go); false if it did not. */
    private boolean leave(AmRts a) {
        if (!amWaiting.remove(a)) {
            return false;
        }
        budget.release(a.charged);
        return true;
    }

    /**
     * Places the data where they go ({@code target}: a receive or a pipeline slot), then reads them from the sender
     * when it offered a key this side can use, offers the buffer for PUT when the scheme says so, or asks by RTR.
     */
    private void start(Object target, long tag, long size, long senderReqId, List<RmaTransfer.RailKey> key) {
        if (target instanceof TagReceive r) {
            if (!r.fits(size)) {
                r.truncated(tag, size);
                sendAts(senderReqId, RndvHeaders.STATUS_TRUNCATED);
                return;
            }
            if (!r.claim()) {
                target = null; // cancelled meanwhile: the data still come, and are dropped
            }
        }
        Receive rv = new Receive(tag, (int) size, senderReqId);
        rv.target = target;
        if (target instanceof TagReceive r) {
            rv.buffer = r.target((int) size);
            rv.inPlace = rv.buffer != null;
        }
        if (size == 0) {
            rv.parts = fragments(rv);
            complete(rv);
            sendAts(senderReqId, RndvHeaders.STATUS_OK);
            return;
        }
        rv.id = receives.add(rv);
        if (rv.target instanceof PipelineSlot) {
            if (!budget.tryCharge(MemoryBudget.ENTRY_COST)) { // the text only for the error
                budget.charge(MemoryBudget.ENTRY_COST, "rendezvous message " + rv.id + " for the pipeline");
            }
            rv.charged += MemoryBudget.ENTRY_COST;
        }
        if (scheme == RndvScheme.PUT_ZCOPY) {
            if (wholeBuffer(rv) && offerForPut(rv)) {
                return;
            }
            putFallbackCount.increment(); // heap or scattered buffer, no permitted RMA lane: the sender sends the data
        } else if (key != null) {
            List<RmaTransfer.RailKey> live = endpoint.rmaRails(Capability.GET_ZCOPY).isEmpty() ? List.of()
                    : RndvKeys.live(key); // an RTS that waited unexpected may outlive a lane
            if (!live.isEmpty() && wholeBuffer(rv)) {
                rv.stage = Stage.GET;
                rv.get = new Get(rv, live);
                rv.get.start();
                return;
            }
            getFallbackCount.increment();
        }
        askForData(rv);
    }

    /**
     * Gives {@code rv} its whole buffer, as a GET, a PUT offer or a placing lane needs: the user's, or allocated and
     * charged to the endpoint's budget until the message is complete, a posted receive's too. The peer's RTS alone
     * would otherwise make this side commit the size it announced before any data came (an RTS for 1 GiB, a gigabyte).
     * False when the budget has no room: the data come by RTR instead, committed as they arrive.
     */
    private boolean wholeBuffer(Receive rv) {
        if (rv.buffer != null) {
            return true;
        }
        if (!budget.tryCharge(rv.total)) {
            return false;
        }
        rv.charged += rv.total;
        rv.buffer = alloc.buffer(rv.total);
        return true;
    }

    /** Where RNDV_DATA fragments go: the whole buffer if there is one, else copies; only counted without a target. */
    private Fragments fragments(Receive rv) {
        if (rv.buffer != null) {
            ByteBuf b = rv.buffer;
            rv.buffer = null;
            return Fragments.inPlace(b, rv.total);
        }
        return rv.target == null ? Fragments.counted(rv.total) : Fragments.copied(alloc, rv.total);
    }

    private void askForData(Receive rv) {
        rv.stage = Stage.RTR_SENT;
        if (rv.parts == null) {
            if (rv.buffer == null && rv.target != null) {
                // The message needs this one buffer at the end anyway (a receive's, a slot's for the pipeline or the
                // stream); given now, each fragment is copied there once, or read straight in by the lane, where
                // copies of each composed at the end were two more copies and a buffer per fragment (shm, 4 MiB:
                // a quarter of the rate). Without room in the budget, the copies, as before.
                wholeBuffer(rv);
            }
            rv.parts = fragments(rv);
        }
        ByteBuf h = RndvHeaders.writeRtr(ctx.alloc().buffer(RndvHeaders.RTR_LENGTH), rv.senderReqId, rv.id, rv.total,
                placedFragment(rv), null);
        reply(AmFrame.of(AmIds.RNDV_RTR, h));
    }

    /**
     * The fragment size {@code rv}'s RTR offers: the whole message when its fragments are written into one buffer
     * and every message lane places payloads there as they arrive (tcp reading straight into it,
     * {@link EndpointConfig#minMaxPlaced}), so a frame's size costs this side no memory of its own; else 0, the
     * sender's own fragments. The sender sends frames no larger than its lanes carry, one per lane at least.
     */
    private int placedFragment(Receive rv) {
        return rv.parts.isInPlace() && placesLargeFrames() ? rv.total : 0;
    }

    /** Whether every message lane places payloads in frames larger than their segments. */
    private boolean placesLargeFrames() {
        EndpointConfig lanes = endpoint.endpointConfig();
        return lanes.minMaxPlaced() > lanes.minMaxBcopy();
    }

    /**
     * rndv/put/zcopy: offers the receive buffer to the sender in an RTR with its keys (one per RMA lane's device), when
     * it is one run of native memory (a heap array has no address another process could write) and the endpoint has
     * a permitted RMA lane with PUT_ZCOPY. From here the PUT safety rule (class comment) holds the receive until the
     * sender's last word.
     */
    private boolean offerForPut(Receive rv) {
        MemorySegment run = RndvKeys.nativeRun(rv.buffer, 0, rv.total);
        List<RmaRail> rails = run == null || !endpoint.acceptsOffers() ? List.of()
                : endpoint.rmaRails(Capability.PUT_ZCOPY);
        if (rails.isEmpty()) {
            return false;
        }
        rv.offer = new ArrayList<>(rails.size());
        byte[] key = RndvKeys.offerOnRails(rails, run, rv.offer);
        rv.offerOver = ctx.executor().newPromise();
        rv.stage = Stage.OFFERED;
        List<MemoryRegistration> offer = rv.offer;
        ByteBuf h = RndvHeaders.writeRtr(ctx.alloc().buffer(RndvHeaders.rtrLength(key)), rv.senderReqId, rv.id,
                rv.total, key);
        AmFrame rtr = AmFrame.of(AmIds.RNDV_RTR, h);
        if (!ctx.channel().isOpen() || ctx.isRemoved()) {
            rtr.release();
            offerNeverSent(rv, offer, new IOException(ctx.channel() + " is closed"));
            return true;
        }
        // A write that failed never handed the whole RTR to the lane, so the sender cannot hold the key: the offer
        // may be withdrawn at once instead of being held until the sender's process is gone.
        ctx.writeAndFlush(rtr).addListener(f -> {
            if (!f.isSuccess()) {
                offerNeverSent(rv, offer, f.cause());
            }
        });
        return true;
    }

    /** {@code offer}'s RTR never left: no one can write into the buffer through it, so the receive ends now. */
    private void offerNeverSent(Receive rv, List<MemoryRegistration> offer, Throwable cause) {
        if (rv.offer != offer) {
            return;
        }
        if (rv.stage == Stage.HELD) {
            offer.forEach(MemoryRegistration::close);
            released(rv, new IOException(rv.heldCause.getMessage() + "; its buffer was never offered (the RTR was "
                    + "not sent: " + cause + ")", rv.heldCause.getCause() != null ? rv.heldCause.getCause()
                    : rv.heldCause));
        } else if (rv.stage == Stage.OFFERED) {
            offerOver(rv);
            receives.remove(rv.id);
            abort(rv, new IOException("could not ask for rendezvous message " + rv.id + " (the RTR was not sent)",
                    cause));
        }
    }

    /**
     * Where an RNDV_DATA fragment's payload goes, before it arrives
     * ({@link io.nucx.protocol.ProtocolCodec#placePayload}): into the receive's buffer when the fragments are being
     * written there; else null.
     */
    ByteBuf placePayload(ByteBuf header, int length) {
        if (header.readableBytes() != RndvHeaders.DATA_LENGTH) {
            return null;
        }
        int at = header.readerIndex();
        Receive rv = receives.get(header.getLongLE(at));
        if (rv == null || rv.stage != Stage.RTR_SENT || rv.parts == null) {
            return null;
        }
        return rv.parts.placeFor(header.getLongLE(at + 8), length);
    }

    /**
     * RNDV_DATA: a fragment at {@code offset}. Owns {@code payload}. With {@code atsWanted}, the payload is the sender's
     * own memory (self): once all have arrived, and so have been copied, ATS tells the sender its send is over.
     */
    void onData(long receiverReqId, long offset, ByteBuf payload, boolean atsWanted) {
        try {
            Receive rv = receives.get(receiverReqId);
            if (rv == null || rv.stage == Stage.GET) {
                throw new ProtocolException("rendezvous data for unknown receive " + receiverReqId);
            }
            if (offset < 0 || offset + payload.readableBytes() > rv.total) {
                throw new ProtocolException("rendezvous data [" + offset + ", +" + payload.readableBytes()
                        + ") lies outside receive " + receiverReqId + " of " + rv.total + " bytes");
            }
            if (rv.stage == Stage.OFFERED) {
                offerOver(rv); // the sender sends fragments only once its PUT ended or never began
                rv.stage = Stage.RTR_SENT;
                rv.parts = fragments(rv);
            }
            if (rv.target instanceof PipelineSlot && !rv.parts.isInPlace() && payload.isReadable()) {
                int n = payload.readableBytes();
                if (!budget.tryCharge(n)) { // the text only for the error: not a string per fragment
                    budget.charge(n, "rendezvous message " + rv.id + " (" + rv.total + " bytes, "
                            + rv.parts.received() + " arrived)");
                }
                rv.charged += n;
            }
            rv.parts.add(offset, payload, rv); // named in an error by rv's toString, not a string per fragment
            rv.received = rv.parts.received();
            if (rv.received == rv.total) {
                receives.remove(rv.id);
                if (atsWanted) {
                    sendAts(rv.senderReqId, RndvHeaders.STATUS_OK);
                }
                complete(rv);
            }
        } finally {
            payload.release();
        }
    }

    /**
     * RNDV_ATP: the sender wrote the message into the offered buffer (status OK, size = the message) or stopped and
     * will not write (cancelled). Either way the buffer is released from the offer; the receive completes, or fails.
     */
    void onAtp(long receiverReqId, int status, long size) {
        Receive rv = receives.get(receiverReqId);
        if (rv == null || rv.stage != Stage.OFFERED) {
            throw new ProtocolException("RNDV_ATP for receive " + receiverReqId + ", which is offered to no PUT");
        }
        receives.remove(rv.id);
        offerOver(rv);
        if (status != RndvHeaders.STATUS_OK) {
            abort(rv, new IOException("the sender stopped writing rendezvous message " + receiverReqId + " of "
                    + rv.total + " bytes (RNDV_ATP status " + status + ")"));
            return;
        }
        if (size != rv.total) {
            ProtocolException e = new ProtocolException("RNDV_ATP reports " + size + " bytes written into the "
                    + rv.total + "-byte receive " + receiverReqId);
            abort(rv, e);
            throw e;
        }
        rv.received = rv.total;
        putCount.increment();
        complete(rv);
    }

    /** The sender will write into {@code rv}'s buffer no more: the offer ends (a close waiting for it goes on). */
    private void offerOver(Receive rv) {
        if (rv.offer != null) {
            rv.offer.forEach(MemoryRegistration::close);
            rv.offer = null;
            rv.offerOver.trySuccess(null);
        }
    }

    /**
     * Reads a rendezvous message from the sender's memory into the receive buffer through the RMA lanes (split over
     * them by bandwidth). When done, ATS tells the sender to complete and release. A failed read (EPERM, ESRCH,
     * EFAULT, a verbs error at run time) asks for the data by RTR instead; nothing was appended yet, so the fragments
     * fill the buffer from the start.
     */
    private final class Get extends RmaTransfer {
        private final Receive rv;

        Get(Receive rv, List<RailKey> keys) {
            super(false, keys, rv.buffer, 0, rv.total, 0, alloc, ctx.executor(), counters);
            this.rv = rv;
        }

        @Override
        protected void failed(Throwable cause) {
            rv.get = null;
            getOver(rv);
            getFallbackCount.increment();
            endpoint.rmaFailed("rndv/get/zcopy fell back to RTR", cause);
            askForData(rv);
        }

        @Override
        protected void finished() {
            rv.get = null;
            receives.remove(rv.id);
            rv.received = rv.total;
            getCount.increment();
            // The ATS first, then the close may go (behind it), then the receive's owner hears: its code may close
            // the endpoint or throw, and neither may keep the ATS from going before the close does.
            sendAts(rv.senderReqId, RndvHeaders.STATUS_OK);
            getOver(rv);
            complete(rv);
        }
    }

    /** The GET of {@code rv} no longer reads the sender's memory: a close waiting for it may go. */
    private static void getOver(Receive rv) {
        if (rv.getOver != null) {
            rv.getOver.trySuccess(null);
        }
    }

    private void complete(Receive rv) {
        ByteBuf data;
        if (rv.parts != null) {
            data = rv.parts.take();
            rv.parts = null;
        } else {
            data = rv.buffer.writerIndex(rv.total);
        }
        rv.buffer = null;
        budget.release(rv.charged);
        rv.charged = 0;
        if (data == null) {
            return; // nobody wanted it: only counted
        }
        switch (rv.target) {
            case TagReceive r when rv.inPlace -> r.completeInPlace(rv.tag, data);
            case TagReceive r -> r.deliver(rv.tag, data);
            case PipelineSlot s -> s.complete(new TagMessage(rv.tag, data));
            case StreamSlot s -> s.complete(data);
            case null, default -> data.release();
        }
    }

    /** Fails {@code rv}'s destination with {@code cause} and releases its buffer. */
    private void abort(Receive rv, Throwable cause) {
        if (rv.get != null) {
            rv.get.cancel();
            rv.get = null;
            getOver(rv);
        }
        if (rv.buffer != null) {
            rv.buffer.release();
            rv.buffer = null;
        }
        if (rv.parts != null) {
            rv.parts.release();
            rv.parts = null;
        }
        budget.release(rv.charged);
        rv.charged = 0;
        switch (rv.target) {
            case TagReceive r -> r.fail(cause);
            case PipelineSlot s -> s.abort();
            case StreamSlot s -> s.abort();
            case null, default -> {
            }
        }
    }

    private void sendAts(long senderReqId, int status) {
        reply(AmFrame.of(AmIds.RNDV_ATS, ctx.alloc().buffer(RndvHeaders.ATS_LENGTH).writeLongLE(senderReqId)
                .writeByte(status)));
    }

    /** Answers the sender below this codec; dropped once the endpoint is gone. */
    private void reply(AmFrame frame) {
        if (!ctx.channel().isOpen() || ctx.isRemoved()) {
            frame.release();
            return;
        }
        endpoint.writeAndFlushFrame(ctx, frame, ProtocolCodec.quietPromise(ctx));
    }

    // ------------------------------------------------------------ the end of the endpoint

    /**
     * What a graceful close waits for: offered receives (the sender is writing into them) and reads of the sender's
     * buffer still going (its sender hears of the close only after them, so it never lets go of a buffer being read).
     */
    void collectOutstanding(List<Future<?>> out) {
        for (Receive rv : receives.values()) {
            if (rv.stage == Stage.OFFERED) {
                out.add(rv.offerOver);
            } else if (rv.get != null) {
                // reading the sender's buffer: its owner must not free it before the read ends
                if (rv.getOver == null) {
                    rv.getOver = ctx.executor().newPromise();
                }
                out.add(rv.getOver);
            }
        }
    }

    /**
     * The endpoint ended: receives it was feeding fail and release their buffers, its RTS leave the unexpected queue,
     * except offered receives, which are HELD (the PUT safety rule) until the sender's last word or the revoke.
     */
    void abort(Throwable cause) {
        for (RtsArrival a : List.copyOf(unexpected)) {
            matcher.withdraw(a);
            a.discard();
        }
        for (AmRts a : amWaiting) {
            budget.release(a.charged);
            a.ended = new IOException("sender " + ctx.channel() + " went away before the " + a.size + " bytes of "
                    + "active message " + a.id() + " were asked for", cause);
        }
        amWaiting.clear();
        for (Receive rv : new ArrayList<>(receives.values())) {
            if (rv.stage == Stage.HELD || rv.stage == Stage.PARKED) {
                continue; // ended already: only the sender's last word, the revoke or the park may touch it
            }
            IOException why = new IOException("sender " + ctx.channel() + " went away after " + rv.received + " of "
                    + rv.total + " bytes of rendezvous message " + rv.id, cause);
            if (rv.stage == Stage.OFFERED) {
                hold(rv, why);
            } else {
                receives.remove(rv.id);
                abort(rv, why);
            }
        }
    }

    private void hold(Receive rv, Throwable cause) {
        rv.stage = Stage.HELD;
        rv.heldCause = cause;
        held++;
        putHeldCount.increment();
        List<MemoryRegistration> offer = rv.offer;
        // Released in a task of its own: a revoke done at once (the sender already gone, or a transport that can take
        // access back) must not end the receive inside its endpoint's failure, before the endpoint is known failed.
        // With several devices, only once every one of them has withdrawn the sender's access.
        Promise<Void> all = ctx.executor().newPromise();
        PromiseCombiner revokes = new PromiseCombiner(ctx.executor());
        offer.forEach(m -> revokes.add(m.revoke()));
        revokes.finish(all);
        all.addListener(f -> ctx.executor().execute(() -> {
            if (f.isSuccess() && rv.stage == Stage.HELD && rv.offer == offer) {
                Throwable why = rv.heldCause.getCause() != null ? rv.heldCause.getCause() : rv.heldCause;
                released(rv, new IOException(rv.heldCause.getMessage() + "; buffer released once the sender could "
                        + "no longer write it (" + offer + ")", why));
            }
        }));
    }

    /** A HELD receive's sender can write no more: fail it, release its buffer. */
    private void released(Receive rv, Throwable cause) {
        receives.remove(rv.id);
        rv.offer = null;
        rv.offerOver.trySuccess(null);
        held--;
        abort(rv, cause);
        if (held == 0) {
            endpoint.lingerEnded();
        }
    }

    /** Whether receives are held. */
    boolean lingers() {
        return held > 0;
    }

    int heldCount() {
        return held;
    }

    /**
     * A frame on a lane of the ended endpoint: an ATP or DATA naming a HELD receive is the sender's last word on it,
     * which releases it; everything else is dropped. Never throws: the lane only waits for these. Owns {@code frame}.
     */
    void lingerRead(AmFrame frame) {
        try {
            ByteBuf h = frame.header();
            if ((frame.amId() == AmIds.RNDV_ATP && h.readableBytes() == RndvHeaders.ATP_LENGTH)
                    || (frame.amId() == AmIds.RNDV_DATA && h.readableBytes() == RndvHeaders.DATA_LENGTH)) {
                Receive rv = receives.get(h.getLongLE(h.readerIndex()));
                if (rv != null && rv.stage == Stage.HELD) {
                    rv.offer.forEach(MemoryRegistration::close);
                    released(rv, rv.heldCause);
                }
            }
        } finally {
            frame.release();
        }
    }

    /**
     * The worker closes and gives up waiting: each held receive stays incomplete and its buffer is never released,
     * kept reachable for the life of the JVM, because the sender may still write into it. Returns how many.
     */
    int park() {
        List<Receive> heldNow = new ArrayList<>();
        for (Receive rv : receives.values()) {
            if (rv.stage == Stage.HELD) {
                heldNow.add(rv);
            }
        }
        long bytes = 0;
        for (Receive rv : heldNow) {
            receives.remove(rv.id);
            // Kept alive whatever the peer does, so the registration ends here (close, not revoke): a revoke still
            // pending would otherwise complete when the peer exits and release what the caller was told is parked.
            rv.stage = Stage.PARKED;
            rv.offer.forEach(MemoryRegistration::close);
            PARKED.add(rv);
            bytes += rv.total;
        }
        held = 0;
        if (!heldNow.isEmpty()) {
            LOG.warn("{} rendezvous receive(s), {} bytes, offered for PUT to the peer of {} that neither confirmed "
                    + "nor lost access: parked for the life of this JVM (never completed, buffers never released)",
                    heldNow.size(), bytes, ctx.channel());
        }
        return heldNow.size();
    }

    /** Receives that closing workers of this JVM parked. */
    static int parkedCount() {
        return PARKED.size();
    }

    /** Receive buffers offered to the sender for PUT (OFFERED or HELD). */
    int offered() {
        int n = 0;
        for (Receive rv : receives.values()) {
            if (rv.stage == Stage.OFFERED || rv.stage == Stage.HELD) {
                n++;
            }
        }
        return n;
    }

    /** Receives in progress (any stage). */
    int receiving() {
        return receives.size();
    }
}
