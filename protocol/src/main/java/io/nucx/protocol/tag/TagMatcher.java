package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import io.netty.util.internal.logging.InternalLogger;
import io.netty.util.internal.logging.InternalLoggerFactory;
import io.nucx.protocol.ProtocolCounters;
import io.nucx.protocol.ProtocolException;
import io.nucx.transport.rma.MemoryRegistration;
import io.nucx.transport.rma.RemoteKey;
import io.nucx.transport.rma.RmaLane;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.channels.ClosedChannelException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.BiPredicate;

/**
 * A worker's tag matching (UCX's {@code ucp_tag_match_t}), confined to the worker's event loop.
 *
 * <ul>
 *   <li>Expected (posted receives): full-mask receives in a hash of per-tag queues, masked ones in one wildcard
 *       queue. Every receive gets a sequence number; an arriving tag takes the earliest-posted match across both.</li>
 *   <li>Unexpected (arrived, not yet received): per-tag queues plus one queue in arrival order; a receive takes the
 *       earliest arrival that matches. An entry removed through one queue is marked consumed and dropped lazily
 *       from the other.</li>
 *   <li>Fragments: {@code message id -> reassembly}. The FIRST fragment decides where the message goes (a posted
 *       receive, the endpoint's pipeline, or the unexpected queue); MIDDLE fragments are copied at their offset. A
 *       receive that matches an unexpected message still in flight takes over its reassembly.</li>
 * </ul>
 * Match rule: {@code ((tag ^ expected) & mask) == 0}.
 *
 * <p>Rendezvous data come as RNDV_DATA fragments (RTR), by a read of the sender's memory ({@code rndv/get/zcopy}), or
 * written by the sender into the receive buffer ({@code rndv/put/zcopy}, {@link RndvScheme#PUT_ZCOPY}).
 *
 * <p><b>The PUT safety rule.</b> With put the peer writes into our memory, and on some transports (cma:
 * {@code process_vm_writev}) nothing on this side can stop it. So a receive whose buffer's key went out in an RTR (an
 * <i>offered</i> receive) is neither completed nor failed back to the user, its promise cannot be cancelled
 * ({@code setUncancellable}), and its buffer is not released, until the sender is known not to write into it any
 * more, that is until one of:
 * <ol>
 *   <li>RNDV_ATP for it arrives, any status: the sender's last word (written, or stopped and will not write);</li>
 *   <li>RNDV_DATA for it arrives: the sender falls back to fragments only after its PUT ended or never began;</li>
 *   <li>the RMA lane has revoked the buffer's registration ({@link MemoryRegistration#revoke()}, asked for when the
 *       receive is held): the sender can no longer write into it. rdma deregisters at once; cma cannot, and completes
 *       when the sender's process has exited (a pidfd, polled every 100 ms).</li>
 * </ol>
 * Its endpoint failing (keepalive timeout, a lost or broken lane, EP_REMOVED) or closing does not end an offered
 * receive: it is <i>held</i> ({@link #heldCount()}, counter {@link RndvProtocols#RECV_PUT_HELD_COUNTER}) with the
 * endpoint's cause, and released with that cause at the first of the three. The endpoint helps the sender say its
 * last word: it keeps its lane open for RNDV_ATP and RNDV_DATA and sends EP_REMOVED on it, so a live sender cancels its
 * PUT and answers ATP(cancelled) ({@code RndvSends}). Bounds: after an ATP, at once; after the revoke, at once (cma:
 * within 100 ms of the sender's exit); a sender that is stopped or hung holds the buffer as long as it stays so, which
 * has no bound this side can set. A worker that closes waits for held receives up to its close bound, then
 * <i>parks</i> them: their buffers are never released nor reused (strongly referenced for the life of the JVM,
 * {@link #parkedCount()}), their receives never complete; the memory is what safety costs.
 */
public final class TagMatcher {

    private static final InternalLogger LOG = InternalLoggerFactory.getInstance(TagMatcher.class);

    /** Receives a closing worker gave up waiting for: kept reachable so their buffers are never freed or reused. */
    private static final Queue<Object> PARKED = new ConcurrentLinkedQueue<>();

    /** A posted receive. */
    private static final class Receive {
        final long tag;
        final long mask;
        final long sn;
        final ByteBuf into;
        final Promise<TagMessage> promise;

        Receive(long tag, long mask, long sn, ByteBuf into, Promise<TagMessage> promise) {
            this.tag = tag;
            this.mask = mask;
            this.sn = sn;
            this.into = into;
            this.promise = promise;
        }

        boolean matches(long incoming) {
            return ((incoming ^ tag) & mask) == 0;
        }
    }

    /** An arrived message nobody has received yet. {@code data} is null while its fragments are still coming. */
    private static final class Unexpected {
        final long tag;
        ByteBuf data;
        Reassembly reassembly;
        boolean consumed;
        /** A synchronous eager message: the sender waits for an acknowledgement of the match. */
        Channel syncSource;
        long syncReqId;
        /** An RTS: the data is still at the sender. */
        Channel rtsSource;
        long rtsSenderReqId;
        long rtsSize;
        /** Whether the RTS carried a remote key ({@code rndv/get/zcopy}). */
        boolean rtsKeyOffered;
        /** That key, unpacked by the endpoint's RMA lane when it arrived; null without a lane. */
        RemoteKey rtsKey;

        Unexpected(long tag) {
            this.tag = tag;
        }
    }

    /** A multi-fragment message being put together. {@code target}: Receive, Unexpected, Channel, or null (drop). */
    private static final class Reassembly {
        final long msgId;
        final long tag;
        final Channel source;
        final int total;
        ByteBuf buffer;
        int received;
        Object target;
        /** Writer index of the user's buffer when the message is written straight into it. */
        int intoWriterIndex = -1;
        /** A zero-copy message's sender request id, acknowledged once every byte has arrived; -1 otherwise. */
        long zcopyReqId = -1;

        /** The map this reassembly is filed in: eager by message id, rendezvous by receiver request id. */
        Map<Long, Reassembly> home;
        /** A rendezvous whose data this side is reading from the sender (rndv/get/zcopy), or null. */
        RndvGet get;
        /** While the buffer is offered to the sender for PUT (rndv/put/zcopy): the endpoint's offers; else null. */
        PutPeer put;
        /** The offered buffer's registration with the RMA lane, while {@code put} is set. */
        MemoryRegistration putRegistration;
        /** Completes when the offer is over (the sender will not write); a graceful close waits for it. */
        Promise<Void> putReleased;
        /** Why an offered receive will fail once released: its endpoint ended while it was offered. */
        Throwable heldCause;

        Reassembly(long msgId, long tag, Channel source, int total) {
            this.msgId = msgId;
            this.tag = tag;
            this.source = source;
            this.total = total;
        }
    }

    /** How many of a source endpoint's buffers are offered for PUT. */
    private static final class PutPeer {
        int offered;
    }

    private final EventExecutor loop;
    private final ByteBufAllocator alloc;
    private final long maxMessageSize;
    private final BiPredicate<Channel, Long> pipelineDelivery;

    private final Map<Long, ArrayDeque<Receive>> exactExpected = new HashMap<>();
    private final ArrayDeque<Receive> wildcardExpected = new ArrayDeque<>();
    private final Map<Long, ArrayDeque<Unexpected>> unexpectedByTag = new HashMap<>();
    private final ArrayDeque<Unexpected> unexpectedAll = new ArrayDeque<>();
    private final Map<Long, Reassembly> reassemblies = new HashMap<>();
    private final Map<Long, Reassembly> rndvReceives = new HashMap<>();
    private final TagReplies replies;
    private final LongAdder getCount;
    private final LongAdder getFallbackCount;
    private final LongAdder putCount;
    private final LongAdder putFallbackCount;
    private final LongAdder putHeldCount;
    private final RndvScheme scheme;
    /** Offered receives whose endpoint ended: by receiver request id. */
    private final Map<Long, Reassembly> held = new HashMap<>();
    private final Map<Channel, PutPeer> putPeers = new HashMap<>();
    private Promise<Void> heldWaiter;
    private long nextSn;
    private long nextReceiverReqId = 1;
    private int expectedCount;
    private int unexpectedCount;
    private boolean closed;

    /**
     * @param pipelineDelivery decides whether a message that no posted receive wants goes up the source
     *                         endpoint's pipeline instead of the unexpected queue
     */
    public TagMatcher(EventExecutor loop, ByteBufAllocator alloc, long maxMessageSize,
                      BiPredicate<Channel, Long> pipelineDelivery) {
        this(loop, alloc, maxMessageSize, pipelineDelivery, null);
    }

    /**
     * @param rndv answers senders (RTR, ATS, sync acknowledgements); null when nothing may be answered (an RTS or
     *             a synchronous message is then a protocol error)
     */
    public TagMatcher(EventExecutor loop, ByteBufAllocator alloc, long maxMessageSize,
                      BiPredicate<Channel, Long> pipelineDelivery, TagReplies rndv) {
        this(loop, alloc, maxMessageSize, pipelineDelivery, rndv, new ProtocolCounters());
    }

    /** @param counters where the receive side counts how rendezvous data came ({@link RndvProtocols}) */
    public TagMatcher(EventExecutor loop, ByteBufAllocator alloc, long maxMessageSize,
                      BiPredicate<Channel, Long> pipelineDelivery, TagReplies rndv, ProtocolCounters counters) {
        this(loop, alloc, maxMessageSize, pipelineDelivery, rndv, counters, RndvScheme.AUTO);
    }

    /** @param scheme which rendezvous data protocol this receiver asks for (NUCX_RNDV_SCHEME) */
    public TagMatcher(EventExecutor loop, ByteBufAllocator alloc, long maxMessageSize,
                      BiPredicate<Channel, Long> pipelineDelivery, TagReplies rndv, ProtocolCounters counters,
                      RndvScheme scheme) {
        this.scheme = scheme;
        this.getCount = counters.counter(RndvProtocols.RECV_GET_COUNTER);
        this.getFallbackCount = counters.counter(RndvProtocols.RECV_GET_FALLBACK_COUNTER);
        this.putCount = counters.counter(RndvProtocols.RECV_PUT_COUNTER);
        this.putFallbackCount = counters.counter(RndvProtocols.RECV_PUT_FALLBACK_COUNTER);
        this.putHeldCount = counters.counter(RndvProtocols.RECV_PUT_HELD_COUNTER);
        this.replies = rndv;
        this.loop = loop;
        this.alloc = alloc;
        this.maxMessageSize = maxMessageSize;
        this.pipelineDelivery = pipelineDelivery;
    }

    /** Posted receives not yet matched (cancelled ones may still be counted until they are passed over). */
    public int expectedCount() {
        return expectedCount;
    }

    /** Arrived messages not yet received. */
    public int unexpectedCount() {
        return unexpectedCount;
    }

    /** Messages whose fragments are still arriving. */
    public int reassemblyCount() {
        return reassemblies.size() + rndvReceives.size();
    }

    /** Receives whose buffer is offered to a sender for PUT, held past their endpoint's end included. */
    public int putOfferedCount() {
        int n = 0;
        for (PutPeer p : putPeers.values()) {
            n += p.offered;
        }
        return n;
    }

    /** Offered receives whose endpoint ended before the sender's last word (see the PUT safety rule). */
    public int heldCount() {
        return held.size();
    }

    /** Receives that closing workers of this JVM parked: never completed, their buffers never released. */
    public static int parkedCount() {
        return PARKED.size();
    }

    /** Whether buffers are offered to {@code source}'s peer for PUT (held ones included). */
    public boolean putOfferedTo(Channel source) {
        return putPeers.containsKey(source);
    }

    /** Completes when each receive from {@code source} now offered for PUT is released (a graceful close waits). */
    public List<Future<Void>> putReleasesOf(Channel source) {
        List<Future<Void>> out = new ArrayList<>();
        for (Reassembly ra : rndvReceives.values()) {
            if (ra.source == source && ra.put != null) {
                out.add(ra.putReleased);
            }
        }
        return out;
    }

    // ---------------------------------------------------------------- receives

    /**
     * Posts a receive. If an unexpected message matches, the earliest one is taken; otherwise the receive waits.
     *
     * @param into the buffer to write the message into (its writable bytes are the limit), or null to allocate
     */
    public void post(long tag, long mask, ByteBuf into, Promise<TagMessage> promise) {
        assert loop.inEventLoop();
        if (closed) {
            promise.tryFailure(new ClosedChannelException());
            return;
        }
        Unexpected u = takeUnexpected(tag, mask);
        Receive r = new Receive(tag, mask, nextSn++, into, promise);
        if (u == null) {
            if (mask == -1L) {
                exactExpected.computeIfAbsent(tag, t -> new ArrayDeque<>()).add(r);
            } else {
                wildcardExpected.add(r);
            }
            expectedCount++;
        } else if (u.rtsSource != null) {
            startRndvReceive(r, u.rtsSource, u.tag, u.rtsSize, u.rtsSenderReqId, u.rtsKeyOffered, u.rtsKey);
        } else {
            if (u.syncSource != null) {
                acknowledge(u.syncSource, u.syncReqId, r, u.data != null ? u.data.readableBytes() : u.reassembly.total);
            }
            if (u.data != null) {
                ByteBuf data = u.data;
                u.data = null;
                deliver(r, u.tag, data);
            } else {
                r.promise.setUncancellable(); // its buffer takes the fragments still to come: no taking it back
                u.reassembly.target = r; // still arriving: the receive completes with the last fragment
            }
        }
    }

    private Unexpected takeUnexpected(long tag, long mask) {
        if (unexpectedCount == 0) {
            return null;
        }
        if (mask == -1L) {
            ArrayDeque<Unexpected> q = unexpectedByTag.get(tag);
            if (q == null) {
                return null;
            }
            Unexpected u;
            while ((u = q.poll()) != null && u.consumed) {
                // dropped lazily: already taken through the arrival-order queue
            }
            if (q.isEmpty()) {
                unexpectedByTag.remove(tag);
            }
            return u == null ? null : consume(u);
        }
        for (Iterator<Unexpected> it = unexpectedAll.iterator(); it.hasNext(); ) {
            Unexpected u = it.next();
            if (u.consumed) {
                it.remove();
            } else if (((u.tag ^ tag) & mask) == 0) {
                it.remove();
                return consume(u);
            }
        }
        return null;
    }

    private Unexpected consume(Unexpected u) {
        u.consumed = true;
        unexpectedCount--;
        if (unexpectedCount == 0) {
            unexpectedAll.clear();
            unexpectedByTag.clear();
        }
        return u;
    }

    /** The earliest-posted live receive matching {@code tag}, removed from its queue; null if none. */
    private Receive takeExpected(long tag) {
        if (expectedCount == 0) {
            return null;
        }
        ArrayDeque<Receive> exact = exactExpected.get(tag);
        Receive e = null;
        if (exact != null) {
            while ((e = exact.peek()) != null && e.promise.isDone()) {
                exact.poll(); // cancelled while waiting
                expectedCount--;
            }
            if (exact.isEmpty()) {
                exactExpected.remove(tag);
            }
        }
        Receive w = null;
        for (Iterator<Receive> it = wildcardExpected.iterator(); it.hasNext(); ) {
            Receive r = it.next();
            if (r.promise.isDone()) {
                it.remove();
                expectedCount--;
            } else if (r.matches(tag)) {
                w = r;
                if (e == null || w.sn < e.sn) {
                    it.remove();
                }
                break;
            }
        }
        Receive chosen;
        if (e != null && (w == null || e.sn < w.sn)) {
            exact.poll();
            if (exact.isEmpty()) {
                exactExpected.remove(tag);
            }
            chosen = e;
        } else {
            chosen = w;
        }
        if (chosen != null) {
            expectedCount--;
        }
        return chosen;
    }

    // ---------------------------------------------------------------- arrivals

    /** A whole message arrived (EAGER_ONLY). Takes ownership of {@code payload}. */
    public void onEagerOnly(Channel source, long tag, ByteBuf payload) {
        onEagerOnly(source, tag, -1, payload);
    }

    /**
     * A whole message arrived (EAGER_ONLY, or EAGER_SYNC_ONLY when {@code syncReqId >= 0}: the sender is acknowledged
     * when a receive matches it). Takes ownership of {@code payload}.
     */
    public void onEagerOnly(Channel source, long tag, long syncReqId, ByteBuf payload) {
        assert loop.inEventLoop();
        Receive r = takeExpected(tag);
        if (r != null) {
            if (syncReqId >= 0) {
                acknowledge(source, syncReqId, r, payload.readableBytes());
            }
            deliver(r, tag, payload);
        } else if (pipelineDelivery.test(source, tag)) {
            if (syncReqId >= 0) {
                acknowledge(source, syncReqId, null, 0);
            }
            source.pipeline().fireChannelRead(new TagMessage(tag, payload));
            source.pipeline().fireChannelReadComplete();
        } else {
            Unexpected u = addUnexpected(new Unexpected(tag));
            u.data = payload;
            if (syncReqId >= 0) {
                u.syncSource = source;
                u.syncReqId = syncReqId;
            }
        }
    }

    /**
     * A whole zero-copy message arrived (EAGER_ZCOPY_ONLY): it goes where an EAGER_ONLY would, then the sender is told
     * it arrived (not that it matched: that is what a synchronous send waits for). Takes ownership of {@code payload}.
     */
    public void onEagerZcopyOnly(Channel source, long tag, long zcopyReqId, ByteBuf payload) {
        assert loop.inEventLoop();
        if (replies == null) {
            payload.release();
            throw new ProtocolException("zero-copy message from " + source + ", but no replies can be sent here");
        }
        onEagerOnly(source, tag, -1, payload);
        replies.sendZcopyAck(source, zcopyReqId);
    }

    /**
     * The first fragment of a zero-copy message arrived (EAGER_ZCOPY_FIRST): as EAGER_FIRST, and the sender is told
     * once the last byte has arrived. Takes ownership of {@code payload}.
     */
    public void onEagerZcopyFirst(Channel source, long tag, long total, long msgId, long zcopyReqId, ByteBuf payload) {
        if (replies == null) {
            payload.release();
            throw new ProtocolException("zero-copy message from " + source + ", but no replies can be sent here");
        }
        onEagerFirst(source, tag, total, msgId, -1, zcopyReqId, payload);
    }

    /** Tells a synchronous sender its message was matched by {@code r} (null: the pipeline took it). */
    private void acknowledge(Channel source, long syncReqId, Receive r, long length) {
        if (replies == null) {
            throw new ProtocolException("synchronous message from " + source + ", but no replies can be sent here");
        }
        boolean truncated = r != null && r.into != null && length > r.into.writableBytes();
        replies.sendSyncAck(source, syncReqId, truncated ? RndvHeaders.STATUS_TRUNCATED : RndvHeaders.STATUS_OK);
    }

    /** The first fragment of a message arrived (EAGER_FIRST). Takes ownership of {@code payload}. */
    public void onEagerFirst(Channel source, long tag, long total, long msgId, ByteBuf payload) {
        onEagerFirst(source, tag, total, msgId, -1, payload);
    }

    /**
     * The first fragment of a message arrived (EAGER_FIRST, or EAGER_SYNC_FIRST when {@code syncReqId >= 0}).
     * Takes ownership of {@code payload}.
     */
    public void onEagerFirst(Channel source, long tag, long total, long msgId, long syncReqId, ByteBuf payload) {
        onEagerFirst(source, tag, total, msgId, syncReqId, -1, payload);
    }

    private void onEagerFirst(Channel source, long tag, long total, long msgId, long syncReqId, long zcopyReqId,
                              ByteBuf payload) {
        assert loop.inEventLoop();
        try {
            if (total > maxMessageSize || total < 0) {
                throw new ProtocolException("message " + Long.toHexString(msgId) + " announces " + total
                        + " bytes; NUCX_MAX_MSG_SIZE allows " + maxMessageSize);
            }
            if (payload.readableBytes() > total) {
                throw new ProtocolException("first fragment of message " + Long.toHexString(msgId) + " carries "
                        + payload.readableBytes() + " bytes of a " + total + "-byte message");
            }
            if (reassemblies.containsKey(msgId)) {
                throw new ProtocolException("message id " + Long.toHexString(msgId) + " started twice");
            }
            Reassembly ra = new Reassembly(msgId, tag, source, (int) total);
            ra.zcopyReqId = zcopyReqId;
            Receive r = takeExpected(tag);
            if (r != null) {
                r.promise.setUncancellable(); // its buffer takes the fragments still to come: no taking it back
                ra.target = r;
                if (syncReqId >= 0) {
                    acknowledge(source, syncReqId, r, total);
                }
                if (r.into != null) {
                    if (total > r.into.writableBytes()) {
                        r.promise.tryFailure(new MessageTruncatedException(tag, total, r.into.writableBytes()));
                        ra.target = null; // drop the rest
                    } else {
                        ra.intoWriterIndex = r.into.writerIndex();
                        ra.buffer = r.into.retainedSlice(ra.intoWriterIndex, (int) total).writerIndex(0);
                    }
                }
            } else if (pipelineDelivery.test(source, tag)) {
                ra.target = source;
                if (syncReqId >= 0) {
                    acknowledge(source, syncReqId, null, 0);
                }
            } else {
                Unexpected u = addUnexpected(new Unexpected(tag));
                u.reassembly = ra;
                ra.target = u;
                if (syncReqId >= 0) {
                    u.syncSource = source;
                    u.syncReqId = syncReqId;
                }
            }
            if (ra.target != null && ra.buffer == null) {
                ra.buffer = alloc.buffer((int) total);
            }
            ra.home = reassemblies;
            reassemblies.put(msgId, ra);
            append(ra, 0, payload);
        } finally {
            payload.release();
        }
    }

    /** A later fragment arrived (EAGER_MIDDLE). Takes ownership of {@code payload}. */
    public void onEagerMiddle(Channel source, long msgId, long offset, ByteBuf payload) {
        assert loop.inEventLoop();
        try {
            Reassembly ra = reassemblies.get(msgId);
            if (ra == null) {
                throw new ProtocolException("fragment of unknown message id " + Long.toHexString(msgId));
            }
            if (ra.source != source) {
                throw new ProtocolException("fragment of message " + Long.toHexString(msgId) + " came from "
                        + source + ", the message started on " + ra.source);
            }
            if (offset < 0 || offset + payload.readableBytes() > ra.total) {
                throw new ProtocolException("fragment [" + offset + ", +" + payload.readableBytes()
                        + ") lies outside message " + Long.toHexString(msgId) + " of " + ra.total + " bytes");
            }
            append(ra, (int) offset, payload);
        } finally {
            payload.release();
        }
    }

    private void append(Reassembly ra, int offset, ByteBuf payload) {
        int n = payload.readableBytes();
        if (ra.buffer != null) {
            ra.buffer.setBytes(offset, payload, payload.readerIndex(), n);
        }
        ra.received += n;
        if (ra.received == ra.total) {
            ra.home.remove(ra.msgId);
            complete(ra);
            if (ra.zcopyReqId >= 0) {
                replies.sendZcopyAck(ra.source, ra.zcopyReqId); // arrived, wherever it went (even dropped)
            }
        }
    }

    private void complete(Reassembly ra) {
        ByteBuf data = ra.buffer;
        ra.buffer = null;
        if (data != null) {
            data.writerIndex(ra.total);
        }
        Object t = ra.target;
        if (t instanceof Receive r) {
            if (ra.intoWriterIndex >= 0) {
                r.into.writerIndex(ra.intoWriterIndex + ra.total);
                complete(r, new TagMessage(ra.tag, data));
            } else {
                deliver(r, ra.tag, data);
            }
        } else if (t instanceof Unexpected u) {
            u.data = data;
            u.reassembly = null;
        } else if (t instanceof Channel ch) {
            ch.pipeline().fireChannelRead(new TagMessage(ra.tag, data));
            ch.pipeline().fireChannelReadComplete();
        } else if (data != null) {
            data.release();
        }
    }

    /** A rendezvous request arrived (RNDV_RTS): match it now, or keep it unexpected until a receive wants it. */
    public void onRts(Channel source, long tag, long senderReqId, long size) {
        onRts(source, tag, senderReqId, size, null);
    }

    /**
     * As {@link #onRts(Channel, long, long, long)}; with {@code packedKey} non-null the sender offers its buffer to be
     * read ({@code rndv/get/zcopy}). The key is unpacked now by the endpoint's RMA lane, if it has one.
     *
     * @throws ProtocolException also for a key the lane refuses or one not covering exactly {@code size} bytes
     */
    public void onRts(Channel source, long tag, long senderReqId, long size, ByteBuf packedKey) {
        assert loop.inEventLoop();
        if (replies == null) {
            throw new ProtocolException("rendezvous request from " + source + ", but rendezvous is not enabled here");
        }
        if (size > maxMessageSize || size < 0) {
            throw new ProtocolException("rendezvous request " + senderReqId + " announces " + size
                    + " bytes; NUCX_MAX_MSG_SIZE allows " + maxMessageSize);
        }
        boolean keyOffered = packedKey != null;
        RemoteKey key = null;
        if (keyOffered && scheme != RndvScheme.AM && scheme != RndvScheme.PUT_ZCOPY) {
            RmaLane lane = replies.rndvGetLane(source);
            if (lane != null) {
                key = RndvKeys.unpack(lane, packedKey, size, "RNDV_RTS of rendezvous send " + senderReqId);
            }
        }
        Receive r = takeExpected(tag);
        if (r != null) {
            startRndvReceive(r, source, tag, size, senderReqId, keyOffered, key);
        } else if (pipelineDelivery.test(source, tag)) {
            startRndvReceive(source, source, tag, size, senderReqId, keyOffered, key);
        } else {
            Unexpected u = addUnexpected(new Unexpected(tag));
            u.rtsSource = source;
            u.rtsSenderReqId = senderReqId;
            u.rtsSize = size;
            u.rtsKeyOffered = keyOffered;
            u.rtsKey = key;
        }
    }

    /**
     * Places the data where it goes ({@code target}: a Receive or the endpoint channel), then reads it from the sender
     * when it offered a key and this endpoint may read the sender (rndv/get/zcopy), or asks for it (RTR).
     */
    private void startRndvReceive(Object target, Channel source, long tag, long size, long senderReqId,
                                  boolean keyOffered, RemoteKey key) {
        if (target instanceof Receive r) {
            r.promise.setUncancellable(); // the data (fragments, a GET or a PUT) go into its buffer from here on
        }
        if (target instanceof Receive r && r.into != null && size > r.into.writableBytes()) {
            r.promise.tryFailure(new MessageTruncatedException(tag, size, r.into.writableBytes()));
            replies.sendAts(source, senderReqId, RndvHeaders.STATUS_TRUNCATED);
            return;
        }
        Reassembly ra = new Reassembly(nextReceiverReqId++, tag, source, (int) size);
        ra.target = target;
        if (target instanceof Receive r && r.into != null) {
            ra.intoWriterIndex = r.into.writerIndex();
            ra.buffer = r.into.retainedSlice(ra.intoWriterIndex, (int) size).writerIndex(0);
        } else {
            ra.buffer = alloc.buffer((int) size);
        }
        if (size == 0) {
            complete(ra);
            replies.sendAts(source, senderReqId, RndvHeaders.STATUS_OK);
            return;
        }
        ra.home = rndvReceives;
        rndvReceives.put(ra.msgId, ra);
        if (scheme == RndvScheme.PUT_ZCOPY) {
            if (offerForPut(ra, senderReqId)) {
                return;
            }
            putFallbackCount.increment(); // heap or scattered buffer, no permitted RMA lane: the sender sends the data
        } else if (keyOffered) {
            RmaLane lane = scheme == RndvScheme.AM || key == null ? null : replies.rndvGetLane(source);
            if (lane != null && lane.channel().isActive()) {
                ra.get = new RndvGet(ra, key, lane, senderReqId);
                ra.get.next();
                return;
            }
            getFallbackCount.increment(); // no permitted RMA lane on this side: the sender sends the data
        }
        replies.sendRtr(source, senderReqId, ra.msgId, size);
    }

    /**
     * rndv/put/zcopy: offers the receive buffer to the sender in an RTR with its key, when it is one run of native
     * memory (a heap array has no address another process could write) and the endpoint has a permitted RMA lane with
     * PUT_ZCOPY. From here the PUT safety rule (class comment) holds the receive until the sender's last word.
     */
    private boolean offerForPut(Reassembly ra, long senderReqId) {
        MemorySegment dst = RndvKeys.nativeRun(ra.buffer, 0, ra.total);
        if (dst == null) {
            return false;
        }
        RmaLane lane = replies.rndvPutLane(ra.source);
        if (lane == null) {
            return false;
        }
        if (ra.target instanceof Receive r && !r.promise.setUncancellable()) {
            return false; // cancelled meanwhile: the data come by fragments and are dropped
        }
        MemoryRegistration registration;
        try {
            registration = lane.register(dst);
        } catch (IllegalArgumentException | IllegalStateException e) {
            return false; // memory the lane cannot expose: the sender sends fragments
        }
        PutPeer peer = putPeers.computeIfAbsent(ra.source, s -> new PutPeer());
        peer.offered++;
        ra.put = peer;
        ra.putRegistration = registration;
        ra.putReleased = loop.newPromise();
        replies.sendRtr(ra.source, senderReqId, ra.msgId, ra.total, registration.packedKey());
        return true;
    }

    /** The sender will write into {@code ra}'s buffer no more: the safety rule lets go of it. */
    private void putOver(Reassembly ra) {
        PutPeer peer = ra.put;
        if (peer == null) {
            return;
        }
        ra.put = null;
        ra.putRegistration.close(); // nothing more to wait for (after a revoke: already over)
        ra.putRegistration = null;
        held.remove(ra.msgId);
        if (--peer.offered == 0) {
            putPeers.remove(ra.source);
            replies.rndvPutReleased(ra.source);
        }
        ra.putReleased.trySuccess(null);
        if (held.isEmpty() && heldWaiter != null) {
            heldWaiter.trySuccess(null);
            heldWaiter = null;
        }
    }

    /**
     * RNDV_ATP: the sender wrote the message into the offered buffer (status OK, size = the message) or stopped and
     * will not write (cancelled). Either way the buffer is released from the offer; the receive completes, or fails.
     *
     * @throws ProtocolException for an ATP naming no offered receive of {@code source}, or reporting another size
     */
    public void onAtp(Channel source, long receiverReqId, int status, long size) {
        assert loop.inEventLoop();
        Reassembly ra = rndvReceives.get(receiverReqId);
        if (ra == null && held.containsKey(receiverReqId)) {
            onHeldAtpOrData(source, receiverReqId);
            return;
        }
        if (ra == null || ra.source != source || ra.put == null) {
            throw new ProtocolException("RNDV_ATP for receive " + receiverReqId + " from " + source
                    + ", which is offered to no PUT from there");
        }
        putOver(ra);
        rndvReceives.remove(ra.msgId);
        if (status != RndvHeaders.STATUS_OK) {
            abort(ra, new IOException("the sender stopped writing rendezvous message " + receiverReqId + " of "
                    + ra.total + " bytes (RNDV_ATP status " + status + ")"));
            return;
        }
        if (size != ra.total) {
            ProtocolException e = new ProtocolException("RNDV_ATP reports " + size + " bytes written into the "
                    + ra.total + "-byte receive " + receiverReqId);
            abort(ra, e);
            throw e;
        }
        ra.received = ra.total;
        putCount.increment();
        complete(ra);
    }

    /**
     * An RNDV_ATP or RNDV_DATA for {@code receiverReqId} arrived on the lane of an endpoint that has ended: if it names
     * one of its held receives, the sender is done with that buffer, which is released and the receive failed with
     * the endpoint's cause. Anything else is dropped: the lane only lingers for these.
     */
    public void onHeldAtpOrData(Channel source, long receiverReqId) {
        assert loop.inEventLoop();
        Reassembly ra = held.get(receiverReqId);
        if (ra != null && ra.source == source) {
            putOver(ra);
            abort(ra, ra.heldCause);
        }
    }

    /**
     * Keeps an offered receive whose endpoint ended until the sender's last word (the PUT safety rule), and asks the
     * RMA lane to revoke the sender's access to its buffer, which ends the hold once done.
     */
    private void hold(Reassembly ra, Throwable cause) {
        ra.heldCause = cause;
        held.put(ra.msgId, ra);
        putHeldCount.increment();
        MemoryRegistration registration = ra.putRegistration;
        // On a later turn: a revoke may complete at once (the sender already gone), and the endpoint that ended is
        // still ending; its receives end after it has.
        registration.revoke().addListener(f -> loop.execute(() -> {
            if (f.isSuccess() && held.get(ra.msgId) == ra) {
                putOver(ra);
                Throwable endpointCause = ra.heldCause.getCause() != null ? ra.heldCause.getCause() : ra.heldCause;
                abort(ra, new IOException(ra.heldCause.getMessage() + "; buffer released once the sender could no "
                        + "longer write into it (" + registration + ")", endpointCause));
            }
            // else an ATP or DATA released it first (closing the registration), or the worker parked it
        }));
    }

    /** Completes when no receive is held any more, or after {@code timeoutNanos}, whichever comes first. */
    public Future<Void> heldReleased(long timeoutNanos) {
        assert loop.inEventLoop();
        if (held.isEmpty()) {
            return loop.newSucceededFuture(null);
        }
        if (heldWaiter == null) {
            heldWaiter = loop.newPromise();
        }
        Promise<Void> waiter = heldWaiter;
        loop.schedule(() -> waiter.trySuccess(null), timeoutNanos, TimeUnit.NANOSECONDS);
        return waiter;
    }

    /**
     * Gives up waiting for the held receives (their worker closes): each stays incomplete and its buffer is never
     * released, kept reachable for the life of the JVM, because a live sender may still write into it. Logs what
     * was parked. Returns how many.
     */
    public int parkHeld() {
        assert loop.inEventLoop();
        if (held.isEmpty()) {
            return 0;
        }
        long bytes = 0;
        List<String> registrations = new ArrayList<>();
        for (Reassembly ra : held.values()) {
            PARKED.add(ra);
            bytes += ra.total;
            registrations.add(ra.putRegistration.toString());
            ra.putRegistration.close(); // the buffer stays alive whatever the peer does: nothing more to wait for
        }
        int n = held.size();
        held.clear();
        for (Channel source : new ArrayList<>(putPeers.keySet())) {
            putPeers.remove(source);
            replies.rndvPutReleased(source);
        }
        LOG.warn("{} rendezvous receive(s), {} bytes, offered for PUT to peers that neither confirmed nor could be "
                + "revoked ({}): parked for the life of this JVM (never completed, buffers never released)", n, bytes,
                registrations);
        return n;
    }

    /**
     * Reads a rendezvous message from the sender's memory into the receive buffer through the endpoint's RMA lane
     * ({@link RmaTransfer}). When done, ATS tells the sender to complete and release. A failed read (EPERM,
     * ESRCH, EFAULT at run time) asks for the data by RTR instead; nothing was appended yet, so the RNDV_DATA
     * fragments fill the buffer from the start.
     */
    private final class RndvGet extends RmaTransfer {
        private final Reassembly ra;
        private final long senderReqId;

        RndvGet(Reassembly ra, RemoteKey key, RmaLane lane, long senderReqId) {
            super(false, key, lane, ra.buffer, 0, ra.total, alloc, loop);
            this.ra = ra;
            this.senderReqId = senderReqId;
        }

        @Override
        void failed(Throwable cause) {
            ra.get = null;
            getFallbackCount.increment();
            replies.rndvGetFailed(ra.source, cause);
            replies.sendRtr(ra.source, senderReqId, ra.msgId, ra.total);
        }

        @Override
        void finished() {
            ra.get = null;
            rndvReceives.remove(ra.msgId);
            ra.received = ra.total;
            getCount.increment();
            complete(ra);
            replies.sendAts(ra.source, senderReqId, RndvHeaders.STATUS_OK);
        }
    }

    /** Rendezvous data arrived (RNDV_DATA). Takes ownership of {@code payload}. */
    public void onRndvData(Channel source, long receiverReqId, long offset, ByteBuf payload) {
        assert loop.inEventLoop();
        try {
            Reassembly ra = rndvReceives.get(receiverReqId);
            if (ra == null || ra.source != source) {
                throw new ProtocolException("rendezvous data for unknown receive " + receiverReqId + " from "
                        + source);
            }
            if (offset < 0 || offset + payload.readableBytes() > ra.total) {
                throw new ProtocolException("rendezvous data [" + offset + ", +" + payload.readableBytes()
                        + ") lies outside receive " + receiverReqId + " of " + ra.total + " bytes");
            }
            putOver(ra); // an offered receive: the sender sends fragments only once its PUT ended or never began
            append(ra, (int) offset, payload);
        } finally {
            payload.release();
        }
    }

    private Unexpected addUnexpected(Unexpected u) {
        unexpectedAll.add(u);
        unexpectedByTag.computeIfAbsent(u.tag, t -> new ArrayDeque<>()).add(u);
        unexpectedCount++;
        return u;
    }

    /** Completes a receive with {@code data}, copying into the user's buffer if it gave one. Owns {@code data}. */
    private void deliver(Receive r, long tag, ByteBuf data) {
        if (r.into == null) {
            complete(r, new TagMessage(tag, data));
            return;
        }
        try {
            int n = data.readableBytes();
            if (n > r.into.writableBytes()) {
                r.promise.tryFailure(new MessageTruncatedException(tag, n, r.into.writableBytes()));
                return;
            }
            if (!r.promise.setUncancellable()) {
                return; // cancelled from another thread just now: its buffer is the user's again, leave it alone
            }
            int start = r.into.writerIndex();
            r.into.writeBytes(data, data.readerIndex(), n);
            complete(r, new TagMessage(tag, r.into.retainedSlice(start, n)));
        } finally {
            data.release();
        }
    }

    private static void complete(Receive r, TagMessage m) {
        if (!r.promise.trySuccess(m)) {
            m.release(); // cancelled meanwhile
        }
    }

    // ---------------------------------------------------------------- failures

    /** The lane of {@code source} went away: messages it was still sending can never complete. */
    public void onSourceClosed(Channel source, Throwable cause) {
        assert loop.inEventLoop();
        List<Reassembly> dead = new ArrayList<>();
        for (Map<Long, Reassembly> m : List.of(reassemblies, rndvReceives)) {
            for (Reassembly ra : m.values()) {
                if (ra.source == source) {
                    dead.add(ra);
                }
            }
        }
        for (Unexpected u : unexpectedAll) {
            if (!u.consumed && u.rtsSource == source) { // its data can no longer be fetched
                u.consumed = true;
                unexpectedCount--;
            }
        }
        for (Reassembly ra : dead) {
            ra.home.remove(ra.msgId);
            IOException why = new IOException("sender " + source + " went away after " + ra.received + " of "
                    + ra.total + " bytes of message " + Long.toHexString(ra.msgId), cause);
            if (ra.put != null) {
                hold(ra, why); // the sender may still be writing into its buffer
            } else {
                abort(ra, why);
            }
        }
    }

    private void abort(Reassembly ra, Throwable cause) {
        if (ra.get != null) {
            ra.get.cancel();
            ra.get = null;
        }
        if (ra.buffer != null) {
            ra.buffer.release();
            ra.buffer = null;
        }
        if (ra.target instanceof Receive r) {
            r.promise.tryFailure(cause);
        } else if (ra.target instanceof Unexpected u && !u.consumed) {
            u.consumed = true;
            unexpectedCount--;
        }
    }

    /**
     * Fails every posted receive, releases every held message. Idempotent. Receives offered for PUT are held instead
     * (see the PUT safety rule; {@link #heldReleased}, {@link #parkHeld}).
     */
    public void close(Throwable cause) {
        assert loop.inEventLoop();
        if (closed) {
            return;
        }
        closed = true;
        for (Map<Long, Reassembly> m : List.of(reassemblies, rndvReceives)) {
            for (Reassembly ra : new ArrayList<>(m.values())) {
                if (ra.put != null) {
                    hold(ra, cause);
                } else {
                    abort(ra, cause);
                }
            }
            m.clear();
        }
        List<Receive> receives = new ArrayList<>(wildcardExpected);
        exactExpected.values().forEach(receives::addAll);
        wildcardExpected.clear();
        exactExpected.clear();
        expectedCount = 0;
        for (Receive r : receives) {
            r.promise.tryFailure(cause);
        }
        for (Unexpected u : unexpectedAll) {
            if (u.data != null) {
                ReferenceCountUtil.release(u.data);
                u.data = null;
            }
        }
        unexpectedAll.clear();
        unexpectedByTag.clear();
        unexpectedCount = 0;
    }
}
