package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.util.concurrent.Future;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.EndpointConfig;
import io.nucx.protocol.EndpointServices;
import io.nucx.protocol.MemoryDomain;
import io.nucx.protocol.PendingRequests;
import io.nucx.protocol.ProtocolCodec;
import io.nucx.protocol.ProtocolCounters;
import io.nucx.protocol.ProtocolException;
import io.nucx.protocol.RmaRail;
import io.nucx.protocol.RmaTransfer;
import io.nucx.protocol.am.AmHeaders;
import io.nucx.protocol.am.NoAmHandlerException;
import io.nucx.transport.AmFrame;
import io.nucx.transport.Capability;
import io.nucx.transport.rma.MemoryRegistration;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * The send side of the rendezvous protocols on one endpoint. A {@link RndvSendRequest} becomes an RTS and waits, in
 * a stage, for the receiver:
 * <ul>
 *   <li>{@link Stage#RTS_SENT}: an RTR answers it (the data go as RNDV_DATA fragments, the last carrying the send's
 *       promise), or an RTR with the receive buffer's key ({@code rndv/put/zcopy}: the data are written there through
 *       the RMA lane, then RNDV_ATP), or an ATS (the receiver read the data itself, {@code rndv/get/zcopy}, or refused
 *       the message as too long for its buffer);</li>
 *   <li>{@link Stage#DATA_SENT}: the fragments went to a lane that hands payloads to the receiver as they are (self):
 *       they are slices of the user's buffer, so the send completes only on the receiver's ATS, once it has copied
 *       them all ({@link RndvHeaders#DATA_FLAG_ATS});</li>
 *   <li>{@link Stage#PUT}: the data are being written into the receiver's buffer, a few segments per loop turn (2 MiB
 *       on cma). A failure at run time (EPERM, ESRCH, EFAULT) falls back to fragments from offset 0.</li>
 * </ul>
 * <b>Abort</b> (the endpoint ended): a send waiting for its RTR fails; a PUT in progress is cancelled before its next
 * chunk (chunks run on this loop, so none is in progress then) and the receiver is told by ATP(cancelled) that
 * nothing more will be written, so it may let go of its buffer (the PUT safety rule, {@link RndvReceiver}). Those
 * last words go below the gone pipeline ({@link EndpointServices#writeDirect}); the endpoint lingers until they are
 * written, at most NUCX_KEEPALIVE_TIMEOUT.
 */
final class RndvSender {

    enum Stage { RTS_SENT, PUT, DATA_SENT }

    private final class Send {
        final long tag;
        final ByteBuf content;
        final ChannelPromise promise;
        Stage stage = Stage.RTS_SENT;
        long id;
        /**
         * The send buffer exposed for the receiver's GET, one registration per device of ours; empty if none (a list
         * of its own only once offered: none per send where no lane reads).
         */
        List<MemoryRegistration> getOffers = List.of();
        /** The PUT writing this message into the receiver, or null. */
        Put put;

        Send(long tag, ByteBuf content, ChannelPromise promise) {
            this.tag = tag;
            this.content = content;
            this.promise = promise;
        }

        /** The send is over: its buffer is released, its GET offers withdrawn. */
        void release() {
            for (MemoryRegistration m : getOffers) {
                m.close();
            }
            getOffers = List.of();
            content.release();
        }
    }

    private final ChannelHandlerContext ctx;
    private final EndpointServices endpoint;
    private final int fragment;
    private final PendingRequests<Send> sends;
    private final LongAdder putCount;
    private final LongAdder putFallbackCount;
    private final LongAdder getFallbackCount;
    /** What the RTSes went as: {@code rndv/get/zcopy} with the send buffer's key, else {@code tag/rndv}. */
    private final ProtocolCounters.Traffic getCount;
    private final ProtocolCounters.Traffic rndvCount;
    private final ProtocolCounters counters;
    /** ATP(cancelled) frames written at the end and not yet gone; the endpoint lingers until they are. */
    private int lastWordsPending;
    /** The endpoint ended with sends whose RTS the peer may be answering with an offer (see {@link #abort}). */
    private boolean announcedAtEnd;

    /** @param inFlight the worker's count of rendezvous in progress, for metrics */
    RndvSender(ChannelHandlerContext ctx, EndpointServices endpoint, ProtocolCounters counters,
               AtomicInteger inFlight) {
        this.ctx = ctx;
        this.sends = new PendingRequests<>(inFlight);
        this.endpoint = endpoint;
        // Each fragment fits every lane it may take.
        this.fragment = endpoint.endpointConfig().minMaxBcopy() - RndvHeaders.DATA_LENGTH;
        this.counters = counters;
        this.putCount = counters.counter(RndvProtocols.PUT_COUNTER);
        this.putFallbackCount = counters.counter(RndvProtocols.PUT_FALLBACK_COUNTER);
        this.getFallbackCount = counters.counter(RndvProtocols.GET_FALLBACK_COUNTER);
        String transport = endpoint.endpointConfig().amTransport();
        this.getCount = counters.traffic(RndvProtocols.GET_ZCOPY.name(), transport);
        this.rndvCount = counters.traffic(RndvProtocols.TAG_RNDV.name(), transport);
    }

    /** Sends the RTS of {@code req} and keeps it until the receiver answers. Owns the request's reference. */
    void write(RndvSendRequest req, ChannelPromise promise) {
        ByteBuf content = req.content();
        // A void promise cannot be waited for (a graceful close waits for every send): a real one that still reports a
        // failure to the pipeline as the void promise would.
        Send s = new Send(req.tag(), content, promise.isVoid() ? promise.unvoid() : promise);
        s.id = sends.add(s);
        byte[] key = null;
        if (req.offerGet()) {
            // By device when the endpoint names them: the key goes out even while the lanes still connect (an RTS
            // written during wireup); else by the connected rails. Held until ATS (or RTR) says the receiver is done.
            List<MemoryDomain> domains = endpoint.memoryDomains(Capability.GET_ZCOPY);
            List<RmaRail> rails = domains.isEmpty() ? endpoint.rmaRails(Capability.GET_ZCOPY) : List.of();
            MemorySegment run = domains.isEmpty() && rails.isEmpty() ? null
                    : RndvKeys.nativeRun(content, content.readerIndex(), content.readableBytes());
            if (run != null) {
                s.getOffers = new ArrayList<>(2);
                key = domains.isEmpty() ? RndvKeys.offerOnRails(rails, run, s.getOffers)
                        : RndvKeys.offerOnDomains(domains, run, s.getOffers);
            }
        }
        ByteBuf payload = req.rtsPayload() == null ? Unpooled.EMPTY_BUFFER : req.rtsPayload();
        if (key != null && RndvHeaders.rtsLength(key) + payload.readableBytes()
                > endpoint.endpointConfig().amLaneAttrs().maxBcopy()) {
            // The key and an active message's user header do not fit the RTS's one frame together (a frame the lane
            // cannot hold is lost, and the send with it): no offer, the receiver asks by RTR as for heap memory.
            s.getOffers.forEach(MemoryRegistration::close);
            s.getOffers = List.of();
            key = null;
        }
        if (req.offerGet() && key == null) {
            getFallbackCount.increment();
        }
        (key != null ? getCount : rndvCount).sent(content.readableBytes() + payload.readableBytes());
        ByteBuf header = RndvHeaders.writeRts(ctx.alloc().buffer(RndvHeaders.rtsLength(key)), req.tag(), s.id,
                content.readableBytes(), key);
        endpoint.writeFrame(ctx, AmFrame.of(req.kind().rtsId(), 0, header, payload), ProtocolCodec.quietPromise(ctx));
    }

    private Send find(long senderReqId, String what) {
        Send s = sends.get(senderReqId);
        if (s == null) {
            throw new ProtocolException(what + " for unknown rendezvous send " + senderReqId);
        }
        if (s.stage == Stage.PUT) {
            throw new ProtocolException(what + " for rendezvous send " + senderReqId + ", which is being written by "
                    + "PUT");
        }
        return s;
    }

    /**
     * RNDV_RTR: the receiver is ready. With {@code packedKey} null, the data go as RNDV_DATA fragments. With a key,
     * the data are written there by PUT, then ATP; or as fragments when this endpoint has no permitted RMA lane with
     * PUT_ZCOPY.
     *
     * @throws ProtocolException for an unknown or busy send, or a key the RMA lane refuses (another process's memory)
     */
    void onRtr(long senderReqId, long receiverReqId, long size, int placedFragment, ByteBuf packedKey) {
        Send s = find(senderReqId, "RTR");
        if (s.stage == Stage.DATA_SENT) {
            throw new ProtocolException("RTR for rendezvous send " + senderReqId + ", whose data were sent already");
        }
        if (size != s.content.readableBytes()) {
            sends.remove(senderReqId);
            s.promise.tryFailure(new ProtocolException("receiver asked for " + size + " bytes of a "
                    + s.content.readableBytes() + "-byte rendezvous send"));
            s.release();
            if (packedKey != null) { // its buffer is offered to us: say we will not write, so the receiver lets go
                writeAtp(receiverReqId, RndvHeaders.STATUS_CANCELED, 0, ProtocolCodec.quietPromise(ctx));
            }
            return;
        }
        if (!s.getOffers.isEmpty()) {
            getFallbackCount.increment(); // the receiver did not read what we offered
        }
        if (packedKey != null) {
            List<RmaRail> rails = endpoint.rmaRails(Capability.PUT_ZCOPY);
            List<RmaTransfer.RailKey> keys = rails.isEmpty() ? List.of()
                    : RndvKeys.unpack(rails, packedKey, size, "RNDV_RTR for rendezvous send",
                            senderReqId);
            if (!keys.isEmpty()) {
                s.stage = Stage.PUT;
                s.put = new Put(s, keys, receiverReqId);
                s.put.start();
                return;
            }
            putFallbackCount.increment(); // no permitted RMA lane on this side: the data go as fragments
        }
        sendData(s, receiverReqId, placedFragment);
    }

    /**
     * The data as RNDV_DATA fragments from offset 0, slices of the user's buffer. Where every message lane is done
     * with a payload when its write completes, the last fragment carries the user's promise and the send ends here.
     * Where one hands payloads to the receiver as they are (self), the receiver may still be reading them then: the
     * fragments ask for an ATS once all have arrived, and the send waits for it ({@link Stage#DATA_SENT}), rather
     * than copying them as eager does (a rendezvous message is large: one copy, the receiver's, instead of two).
     *
     * @param placedFragment the largest fragment the receiver places as it arrives (its RTR; 0: ours)
     */
    private void sendData(Send s, long receiverReqId, int placedFragment) {
        ByteBuf content = s.content;
        int start = content.readerIndex();
        int length = content.readableBytes();
        int step = fragmentSize(length, placedFragment);
        boolean untilAts = !endpoint.endpointConfig().messageLanesFreePayloadOnWrite(step, !content.isDirect());
        int flags = (step > fragment ? AmFrame.FLAG_PLACED : 0) | (untilAts ? RndvHeaders.DATA_FLAG_ATS : 0);
        if (untilAts) {
            s.stage = Stage.DATA_SENT;
        } else {
            sends.remove(s.id);
        }
        try {
            for (int offset = 0; offset < length; offset += step) {
                int n = Math.min(step, length - offset);
                ByteBuf header = ctx.alloc().buffer(RndvHeaders.DATA_LENGTH).writeLongLE(receiverReqId)
                        .writeLongLE(offset);
                boolean last = offset + n == length;
                endpoint.writeFrame(ctx, AmFrame.of(AmIds.RNDV_DATA, flags, header,
                        content.retainedSlice(start + offset, n)), last && !untilAts ? s.promise
                        : ProtocolCodec.quietPromise(ctx));
            }
            endpoint.flushFrames(ctx);
        } finally {
            if (!untilAts) {
                s.release();
            }
        }
    }

    /**
     * Our fragments, or larger ones when the receiver places them (its RTR) and every message lane of ours carries
     * placed frames that large: fewer frames, each read by the receiver's socket straight into its buffer (UCT tcp sends
     * a whole rendezvous as one PUT_ZCOPY so). Still one per message lane at least, so that several lanes share it, and
     * of even size.
     */
    private int fragmentSize(int length, int placedFragment) {
        EndpointConfig lanes = endpoint.endpointConfig();
        int offered = Math.min(placedFragment, lanes.minMaxPlaced() - RndvHeaders.DATA_LENGTH);
        if (offered <= fragment) {
            return fragment;
        }
        // As few frames as fit, at least one per lane, of even size (no small tail).
        long frames = Math.max((length + (long) offered - 1) / offered, 1 + lanes.bwLanes().size());
        return (int) Math.max(fragment, (length + frames - 1) / frames);
    }

    private void writeAtp(long receiverReqId, int status, long size, ChannelPromise promise) {
        ByteBuf header = RndvHeaders.writeAtp(ctx.alloc().buffer(RndvHeaders.ATP_LENGTH), receiverReqId, status,
                size);
        endpoint.writeAndFlushFrame(ctx, AmFrame.of(AmIds.RNDV_ATP, header), promise);
    }

    /**
     * Writes one send into the receiver's offered buffer through the RMA lanes (split over them by bandwidth), then
     * ATP. A failure falls back to fragments from offset 0 (whatever the PUT wrote is overwritten); a cancel stops it
     * before its next chunk.
     */
    private final class Put extends RmaTransfer {
        private final Send s;
        private final long receiverReqId;

        Put(Send s, List<RailKey> keys, long receiverReqId) {
            super(true, keys, s.content, s.content.readerIndex(), s.content.readableBytes(), 0, ctx.alloc(),
                    ctx.executor(), counters);
            this.s = s;
            this.receiverReqId = receiverReqId;
        }

        @Override
        protected void failed(Throwable cause) {
            s.put = null;
            putFallbackCount.increment();
            endpoint.rmaFailed("rndv/put/zcopy fell back to RNDV_DATA", cause);
            sendData(s, receiverReqId, 0);
        }

        @Override
        protected void finished() {
            s.put = null;
            sends.remove(s.id);
            putCount.increment();
            s.release(); // the data are in the receiver's buffer
            writeAtp(receiverReqId, RndvHeaders.STATUS_OK, total, s.promise);
        }
    }

    /** RNDV_ATS: the receiver ended the send without asking for data: done (it read them, or 0 bytes) or refused. */
    void onAts(long senderReqId, int status) {
        Send s = find(senderReqId, "ATS");
        sends.remove(senderReqId);
        try {
            if (status == RndvHeaders.STATUS_OK) {
                s.promise.trySuccess();
            } else if (status == RndvHeaders.STATUS_TRUNCATED) {
                s.promise.tryFailure(new MessageTruncatedException(s.tag, s.content.readableBytes(), -1));
            } else if (status == RndvHeaders.STATUS_NO_HANDLER) {
                s.promise.tryFailure(new NoAmHandlerException("the receiver has no handler for active message id "
                        + AmHeaders.id(s.tag) + ": it refused the " + s.content.readableBytes() + "-byte rendezvous"));
            } else {
                s.promise.tryFailure(new ProtocolException("rendezvous send " + senderReqId + " ended with status "
                        + status));
            }
        } finally {
            s.release();
        }
    }

    /** The sends still waiting for the receiver (a graceful close waits for them). */
    void collectOutstanding(List<Future<?>> out) {
        sends.values().forEach(s -> out.add(s.promise));
    }

    int waiting() {
        return sends.size();
    }

    /**
     * The endpoint ended: every waiting send fails; a PUT in progress is cancelled and its receiver told by
     * ATP(cancelled), below the pipeline, that nothing more will be written. A send whose fragments wait for their
     * ATS (self) fails as well: whether the receiver got them is unknown, as for any send that fails with its
     * endpoint.
     */
    void abort(Throwable cause) {
        for (Send s : sends.takeAll()) {
            if (s.stage == Stage.PUT) {
                s.put.cancel();
                lastWords(s.put.receiverReqId);
            } else if (s.stage == Stage.RTS_SENT) {
                announcedAtEnd = true; // its RTR may be on the way: refuse it (refuseLateOffer) rather than not read it
            }
            s.promise.tryFailure(cause);
            s.release();
        }
    }

    /**
     * The peer offered a receive buffer for PUT (an RTR with a key) to an endpoint that has ended: it would hold that
     * buffer until our process exits. Tell it at once that nothing will be written.
     */
    void refuseLateOffer(AmFrame frame) {
        ByteBuf h = frame.header();
        if (frame.amId() == AmIds.RNDV_RTR && h.readableBytes() > RndvHeaders.RTR_LENGTH) {
            lastWords(h.getLongLE(h.readerIndex() + 8));
        }
    }

    private void lastWords(long receiverReqId) {
        ByteBuf header = RndvHeaders.writeAtp(ctx.alloc().buffer(RndvHeaders.ATP_LENGTH), receiverReqId,
                RndvHeaders.STATUS_CANCELED, 0);
        ChannelFuture f = endpoint.writeDirect(AmFrame.of(AmIds.RNDV_ATP, header));
        if (f.isDone()) {
            return;
        }
        lastWordsPending++;
        // A lane that does not drain must not keep the endpoint forever: the close bound ends the wait.
        Future<?> bound = ctx.executor().schedule(this::lastWordWritten, endpoint.closeWaitNanos(),
                TimeUnit.NANOSECONDS);
        f.addListener(done -> {
            if (bound.cancel(false)) {
                lastWordWritten();
            }
        });
    }

    private void lastWordWritten() {
        if (--lastWordsPending == 0) {
            endpoint.lingerEnded();
        }
    }

    /** Whether the endpoint ended with sends announced and not answered: the peer may still offer for them. */
    boolean announcedAtEnd() {
        return announcedAtEnd;
    }

    /** Whether last words are still being written. */
    boolean lingers() {
        return lastWordsPending > 0;
    }
}
