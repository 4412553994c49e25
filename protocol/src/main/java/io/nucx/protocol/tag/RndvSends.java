package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.util.concurrent.Future;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.ProtocolCounters;
import io.nucx.protocol.ProtocolException;
import io.nucx.transport.AmFrame;
import io.nucx.transport.rma.MemoryRegistration;
import io.nucx.transport.rma.RemoteKey;
import io.nucx.transport.rma.RmaLane;
import io.nucx.transport.rma.RmaOp;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/**
 * A worker's rendezvous sends waiting for the receiver: sender request id → the message, its promise and where to
 * write its data. Request ids are local and indirect (a map, not a reference), so an id from a peer that went away
 * finds nothing. Confined to the worker's loop.
 *
 * <p>An RTR may carry the receive buffer's remote key ({@code rndv/put/zcopy}): the send then writes the message
 * into the receiver's memory through the endpoint's RMA lane ({@link RmaOp#put}, one segment per loop turn;
 * straight from the send buffer when it is one run of native memory, else through a pooled direct bounce chunk), and
 * sends RNDV_ATP when all of it is there; the ATP carries the send's promise. It stays waiting meanwhile, so a
 * graceful close waits for it. Without a permitted RMA lane, or when the PUT fails at run time (EPERM, ESRCH, EFAULT),
 * the data go as RNDV_DATA fragments from offset 0 instead (counted; the receiver takes fragments as the end of the
 * PUT). When the endpoint fails or closes, a PUT in progress is cancelled before its next chunk (none runs meanwhile:
 * chunks run on this loop) and, if the lane can still carry it, an ATP with status cancelled tells the receiver it may
 * release its buffer; no PUT starts after that.
 *
 * <p>For {@code rndv/get/zcopy} a send's buffer is registered with the endpoint's RMA lane ({@link #exposeForGet}) and
 * its key goes in the RTS; the registration ends with the send.
 */
public final class RndvSends {

    /** The RMA lanes sends write through and expose their buffers to; the worker implements it. */
    public interface RmaLanes {
        /**
         * The RMA lane of {@code endpoint} for {@code rndv/put/zcopy}: when lane selection chose one the transport
         * permits and both sides have PUT_ZCOPY, else null (the data then go as fragments).
         */
        RmaLane putLane(Channel endpoint);

        /**
         * The RMA lane of {@code endpoint} a send buffer is registered with for {@code rndv/get/zcopy} (the peer reads
         * it through its own), or null (the RTS then carries no key and the receiver asks by RTR).
         */
        default RmaLane getLane(Channel endpoint) {
            return null;
        }

        /** A PUT failed at run time; the data went as fragments instead. For diagnostics. */
        default void putFailed(Channel endpoint, Throwable cause) {
        }
    }

    private static final class Pending {
        final long id;
        final long tag;
        final ByteBuf content;
        final ChannelPromise promise;
        final ChannelHandlerContext ctx;
        final int fragment;
        /** The PUT writing this message into the receiver, or null. */
        RndvPut put;
        /** The content's registration whose key the RTS offered for GET, until the receiver is done; or null. */
        MemoryRegistration exposed;

        Pending(long id, long tag, ByteBuf content, ChannelPromise promise, ChannelHandlerContext ctx, int fragment,
                MemoryRegistration exposed) {
            this.id = id;
            this.tag = tag;
            this.content = content;
            this.promise = promise;
            this.ctx = ctx;
            this.fragment = fragment;
            this.exposed = exposed;
        }

        /** The receiver will not read the content (any more): its registration ends. */
        void unexpose() {
            if (exposed != null) {
                exposed.close();
                exposed = null;
            }
        }

        Channel endpoint() {
            return ctx.channel();
        }
    }

    private final Map<Long, Pending> pending = new HashMap<>();
    private final RmaLanes putLanes;
    private final LongAdder putCount;
    private final LongAdder putFallbackCount;
    private long nextId = 1;

    /** Sends without PUT: a key-carrying RTR is answered with fragments. */
    public RndvSends() {
        this(endpoint -> null, new ProtocolCounters());
    }

    /** @param counters where PUTs and their fallbacks are counted ({@link RndvProtocols#PUT_COUNTER}) */
    public RndvSends(RmaLanes putLanes, ProtocolCounters counters) {
        this.putLanes = putLanes;
        this.putCount = counters.counter(RndvProtocols.PUT_COUNTER);
        this.putFallbackCount = counters.counter(RndvProtocols.PUT_FALLBACK_COUNTER);
    }

    /**
     * Registers a send; returns its request id. Takes ownership of {@code content} and {@code exposed} (the content's
     * registration for GET, or null), which ends with the send.
     */
    long add(long tag, ByteBuf content, ChannelPromise promise, ChannelHandlerContext ctx, int fragment,
             MemoryRegistration exposed) {
        long id = nextId++;
        pending.put(id, new Pending(id, tag, content, promise, ctx, fragment, exposed));
        return id;
    }

    /**
     * Registers {@code content}'s readable bytes with {@code endpoint}'s RMA lane for {@code rndv/get/zcopy}; null
     * when there is no lane or the memory cannot be exposed (then the RTS goes without a key).
     */
    MemoryRegistration exposeForGet(Channel endpoint, ByteBuf content) {
        java.lang.foreign.MemorySegment run = RndvKeys.nativeRun(content, content.readerIndex(),
                content.readableBytes());
        RmaLane lane = run == null ? null : putLanes.getLane(endpoint);
        if (lane == null) {
            return null;
        }
        try {
            return lane.register(run);
        } catch (IllegalArgumentException | IllegalStateException e) {
            return null;
        }
    }

    /** Sends waiting, for tests and diagnostics. */
    public int size() {
        return pending.size();
    }

    private Pending find(Channel source, long senderReqId, String what) {
        Pending p = pending.get(senderReqId);
        if (p == null || p.endpoint() != source) {
            throw new ProtocolException(what + " for unknown rendezvous send " + senderReqId + " from " + source);
        }
        if (p.put != null) {
            throw new ProtocolException(what + " for rendezvous send " + senderReqId + " from " + source
                    + ", which is being written by PUT");
        }
        return p;
    }

    /** The receiver is ready: send the data as RNDV_DATA fragments; the last carries the user's promise. */
    public void onRtr(Channel source, long senderReqId, long receiverReqId, long size) {
        onRtr(source, senderReqId, receiverReqId, size, null);
    }

    /**
     * The receiver is ready (and reads nothing: an offered GET key is released). With {@code packedKey} null: send the
     * data as RNDV_DATA fragments, the last carrying the user's promise. With a key: unpack it with this endpoint's
     * RMA lane, write the message there by PUT, then ATP; or fragments when this endpoint has no permitted RMA lane
     * with PUT_ZCOPY.
     *
     * @throws ProtocolException for an unknown or busy send, or a key the lane refuses (another process's memory, a
     *                           foreign format) or that does not cover exactly {@code size} bytes
     */
    public void onRtr(Channel source, long senderReqId, long receiverReqId, long size, ByteBuf packedKey) {
        Pending p = find(source, senderReqId, "RTR");
        p.unexpose();
        if (size != p.content.readableBytes()) {
            pending.remove(senderReqId);
            p.promise.tryFailure(new ProtocolException("receiver asked for " + size + " bytes of a "
                    + p.content.readableBytes() + "-byte rendezvous send"));
            p.content.release();
            if (packedKey != null) { // its buffer is offered to us: say we will not write, so the receiver can let go
                writeAtp(p, receiverReqId, RndvHeaders.STATUS_CANCELED, 0, p.ctx.voidPromise());
            }
            return;
        }
        if (packedKey != null) {
            RmaLane lane = source.isOpen() ? putLanes.putLane(source) : null; // no PUT starts after the endpoint ended
            if (lane != null && lane.channel().isActive()) {
                RemoteKey key = RndvKeys.unpack(lane, packedKey, size, "RNDV_RTR for rendezvous send " + senderReqId
                        + " from " + source);
                p.put = new RndvPut(p, key, lane, receiverReqId);
                p.put.next();
                return;
            }
            putFallbackCount.increment(); // no permitted RMA lane on this side: the data go as fragments
        }
        pending.remove(senderReqId);
        sendData(p, receiverReqId);
    }

    /** The data as RNDV_DATA fragments from offset 0, the last carrying the user's promise; releases the content. */
    private static void sendData(Pending p, long receiverReqId) {
        ByteBuf content = p.content;
        try {
            ChannelHandlerContext ctx = p.ctx;
            int start = content.readerIndex();
            int length = content.readableBytes();
            for (int offset = 0; offset < length; offset += p.fragment) {
                int n = Math.min(p.fragment, length - offset);
                ByteBuf header = ctx.alloc().buffer(RndvHeaders.DATA_LENGTH).writeLongLE(receiverReqId)
                        .writeLongLE(offset);
                boolean last = offset + n == length;
                ctx.write(AmFrame.of(AmIds.RNDV_DATA, 0, header, content.retainedSlice(start + offset, n)),
                        last ? p.promise : ctx.voidPromise());
            }
            ctx.flush();
        } finally {
            content.release();
        }
    }

    private static ChannelFuture writeAtp(Pending p, long receiverReqId, int status, long size,
                                          ChannelPromise promise) {
        ByteBuf header = RndvHeaders.writeAtp(p.ctx.alloc().buffer(RndvHeaders.ATP_LENGTH), receiverReqId, status,
                size);
        return p.ctx.writeAndFlush(AmFrame.of(AmIds.RNDV_ATP, header), promise);
    }

    /**
     * Writes one send into the receiver's offered buffer through the RMA lane, then ATP. A failure falls back to
     * fragments from offset 0 (whatever the PUT wrote is overwritten); a cancel stops it before its next chunk.
     */
    private final class RndvPut extends RmaTransfer {
        private final Pending p;
        private final long receiverReqId;

        RndvPut(Pending p, RemoteKey key, RmaLane lane, long receiverReqId) {
            super(true, key, lane, p.content, p.content.readerIndex(), p.content.readableBytes(), p.ctx.alloc(),
                    p.ctx.executor());
            this.p = p;
            this.receiverReqId = receiverReqId;
        }

        @Override
        void failed(Throwable cause) {
            p.put = null;
            pending.remove(p.id);
            putFallbackCount.increment();
            putLanes.putFailed(p.endpoint(), cause);
            sendData(p, receiverReqId);
        }

        @Override
        void finished() {
            p.put = null;
            pending.remove(p.id);
            putCount.increment();
            p.content.release(); // the data are in the receiver's buffer
            writeAtp(p, receiverReqId, RndvHeaders.STATUS_OK, total, p.promise);
        }
    }

    /** The receiver ended the send without data: done (a 0-byte message) or refused (truncated). */
    public void onAts(Channel source, long senderReqId, int status) {
        Pending p = find(source, senderReqId, "ATS");
        pending.remove(senderReqId);
        p.unexpose(); // the receiver has read it, or refused it
        try {
            if (status == RndvHeaders.STATUS_OK) {
                p.promise.trySuccess();
            } else if (status == RndvHeaders.STATUS_TRUNCATED) {
                p.promise.tryFailure(new MessageTruncatedException(p.tag, p.content.readableBytes(), -1));
            } else {
                p.promise.tryFailure(new ProtocolException("rendezvous send " + senderReqId + " ended with status "
                        + status));
            }
        } finally {
            p.content.release();
        }
    }

    /** The promises of {@code endpoint}'s sends still waiting for the receiver (a graceful close waits for them). */
    public List<Future<Void>> promisesOf(Channel endpoint) {
        List<Future<Void>> out = new ArrayList<>();
        for (Pending p : pending.values()) {
            if (p.endpoint() == endpoint) {
                out.add(p.promise);
            }
        }
        return out;
    }

    /**
     * The endpoint went away: its waiting sends fail. PUTs in progress are cancelled and each receiver told by ATP
     * (cancelled) that nothing more will be written, if the lane still carries it.
     *
     * @return the write of the last such ATP, so the endpoint can close its lane behind it; null if none was sent
     */
    public ChannelFuture onEndpointClosed(Channel endpoint, Throwable cause) {
        List<Pending> dead = new ArrayList<>();
        for (Pending p : pending.values()) {
            if (p.endpoint() == endpoint) {
                dead.add(p);
            }
        }
        ChannelFuture lastAbort = null;
        for (Pending p : dead) {
            pending.remove(p.id);
            RndvPut put = p.put;
            if (put != null) {
                put.cancel();
                p.put = null;
                lastAbort = writeAtp(p, put.receiverReqId, RndvHeaders.STATUS_CANCELED, 0, p.ctx.newPromise());
            }
            fail(p, cause);
        }
        return lastAbort;
    }

    /** Fails every waiting send; PUTs in progress are cancelled (their endpoints have told the receivers). */
    public void close(Throwable cause) {
        List<Pending> all = new ArrayList<>(pending.values());
        pending.clear();
        for (Pending p : all) {
            if (p.put != null) {
                p.put.cancel();
                p.put = null;
            }
            fail(p, cause);
        }
    }

    private static void fail(Pending p, Throwable cause) {
        p.unexpose();
        p.content.release();
        p.promise.tryFailure(cause);
    }
}
