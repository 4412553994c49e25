package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.channel.DefaultChannelPromise;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.Future;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.EndpointConfig;
import io.nucx.protocol.EndpointServices;
import io.nucx.protocol.PendingRequests;
import io.nucx.protocol.ProtocolCodec;
import io.nucx.protocol.ProtocolCounters;
import io.nucx.protocol.ProtocolException;
import io.nucx.protocol.am.AmData;
import io.nucx.protocol.select.ProtoCandidate;
import io.nucx.protocol.select.Protocol;
import io.nucx.protocol.select.SelectionCache;
import io.nucx.protocol.select.SelectionKey;
import io.nucx.protocol.stream.StreamData;
import io.nucx.transport.AmFrame;
import io.nucx.transport.Buffers;
import io.nucx.transport.IfaceAttributes;

import java.util.List;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;

/**
 * The send side of the eager tag protocols on one endpoint: picks the protocol the endpoint's table gives for the
 * message's key and size ({@link EagerProtocols}) and writes its frames on the AM lane.
 * <ul>
 *   <li>{@code egr/short}, {@code egr/single/bcopy}: one EAGER_ONLY frame;</li>
 *   <li>{@code egr/multi/bcopy}: an EAGER_FIRST frame then EAGER_MIDDLE frames, each at most the lane's max bcopy;</li>
 *   <li>{@code egr/single/zcopy}, {@code egr/multi/zcopy}: EAGER_ZCOPY_ONLY / EAGER_ZCOPY_FIRST with this endpoint's
 *       request id; the send waits for the receiver's EAGER_ZCOPY_ACK;</li>
 *   <li>{@code egrsnc/*}: EAGER_SYNC_ONLY / EAGER_SYNC_FIRST; the send waits for EAGER_SYNC_ACK (the match);</li>
 *   <li>{@code tag/rndv}, {@code rndv/put/zcopy}, {@code rndv/get/zcopy}: handed down as a {@link RndvSendRequest}
 *       to the rendezvous codec below.</li>
 * </ul>
 * A stream write ({@code StreamData}) takes the same table lookup with the {@code STREAM_SEND} key and the same
 * frames under the stream's first-frame ids (STREAM_ONLY, STREAM_FIRST, STREAM_ZCOPY_*, STREAM_RTS), tag 0; its
 * EAGER_MIDDLE fragments and acknowledgements are the tagged ones. An active message ({@code AmData}) likewise takes
 * the {@code AM_SEND} key (looked up by its data's memory, its size counting the user header) and the AM_* first-frame
 * ids, its tag field holding id, flags and header length: eager, its payload is the user header then the data; by
 * rendezvous, the RTS carries the user header ({@link MessageKind}).
 * The copy protocols' payloads are copied into pooled buffers (copy-in) when the lane's transport would hand them to the
 * receiver as they are (self; {@link IfaceAttributes#freesPayloadOnWrite}), otherwise they are slices of the message,
 * which the transport copies as it writes them (shm's ring, tcp's socket); the zero-copy protocols always send
 * slices. A copy send's promise rides on its last fragment, so it completes when the whole message has
 * left; earlier fragments carry the void promise (a lane whose write fails closes, failing every later fragment).
 */
final class EagerSender {

    /**
     * A send waiting for the peer's acknowledgement (EAGER_SYNC_ACK, EAGER_ZCOPY_ACK), which is also the promise its
     * frames are written with, listening to itself: one object per send, where a promise for the write and a listener
     * on it made two more. Its own completion says only that the frames left; a failed write fails the user's promise
     * at once. A void promise stays void until a graceful close asks for something to wait for ({@link #user}).
     */
    private static final class AckedSend extends DefaultChannelPromise implements ChannelFutureListener {
        private final PendingRequests<AckedSend> waiting;
        private final long tag;
        private final long length;
        private ChannelPromise promise;
        private final long id;

        AckedSend(ChannelHandlerContext ctx, PendingRequests<AckedSend> waiting, long tag, long length,
                  ChannelPromise promise) {
            super(ctx.channel(), ctx.executor());
            this.waiting = waiting;
            this.tag = tag;
            this.length = length;
            this.promise = promise;
            this.id = waiting.add(this);
            addListener(this);
        }

        /** The frames' write completed: a failure ends the send unless the answer came first. */
        @Override
        public void operationComplete(ChannelFuture written) {
            if (!written.isSuccess() && waiting.remove(id) != null) {
                promise.tryFailure(written.cause());
            }
        }

        /**
         * The user's promise, made waitable: a graceful close waits for it, and a void promise cannot be waited for. A
         * real one in its place still reports a failure to the pipeline as the void promise would ({@code unvoid}).
         */
        ChannelPromise user() {
            if (promise.isVoid()) {
                promise = promise.unvoid();
            }
            return promise;
        }
    }

    private final EndpointServices endpoint;
    private final int firstPayload;
    private final int middlePayload;
    private final SelectionCache protocols;
    /**
     * The AM lane as its transport states it, not as the tables see it: a performance profile that fitted the lane's
     * bandwidth takes its copy rate away from the cost model ({@code PerfProfile.apply}), and the ring is still a ring.
     */
    private final IfaceAttributes lane;
    /** Keys by [kind][sync][iov][direct]: built once, so a send costs an index and a table lookup. */
    private final long[] keys = new long[MessageKind.values().length * 8];
    private final LongSupplier messageIds;
    private final LongSupplier defaultTag;
    private final ProtocolCounters.Traffic shortCount;
    private final ProtocolCounters.Traffic singleCount;
    private final ProtocolCounters.Traffic multiCount;
    private final ProtocolCounters.Traffic syncSingleCount;
    private final ProtocolCounters.Traffic syncMultiCount;
    private final ProtocolCounters.Traffic singleZcopyCount;
    private final ProtocolCounters.Traffic multiZcopyCount;
    /** Active messages the tables gave a rendezvous, sent as egr/multi/bcopy: their user header fills the RTS. */
    private final LongAdder amHeaderFallbackCount;
    /** Synchronous sends waiting for EAGER_SYNC_ACK, and zero-copy sends waiting for EAGER_ZCOPY_ACK. */
    private final PendingRequests<AckedSend> syncSends = new PendingRequests<>();
    private final PendingRequests<AckedSend> zcopySends = new PendingRequests<>();

    /**
     * @param endpoint   takes the frames straight to its lanes once connected ({@link EndpointServices#writeToLane})
     * @param protocols  the protocol tables of the endpoint's configuration (shared with like endpoints)
     * @param messageIds the worker's message-id source (unique per sender)
     * @param defaultTag the tag of plain {@link ByteBuf} writes, read at each write
     */
    EagerSender(EndpointServices endpoint, SelectionCache protocols, LongSupplier messageIds, LongSupplier defaultTag,
                ProtocolCounters counters) {
        this.endpoint = endpoint;
        EndpointConfig config = endpoint.endpointConfig();
        this.lane = config.amLaneAttrs();
        String transport = config.amTransport();
        int maxBcopy = lane.maxBcopy();
        if (maxBcopy <= EagerHeaders.FIRST_LENGTH) {
            throw new IllegalArgumentException("AM lane " + config.amLane() + " max bcopy " + maxBcopy
                    + " leaves no room for eager payload");
        }
        // A frame's size limit counts header and payload, as UCT's max_short/max_bcopy do.
        this.firstPayload = maxBcopy - EagerHeaders.FIRST_LENGTH;
        this.middlePayload = maxBcopy - EagerHeaders.MIDDLE_LENGTH;
        this.protocols = protocols;
        for (int i = 0; i < keys.length; i++) {
            MessageKind kind = MessageKind.values()[i / 8];
            keys[i] = SelectionKey.pack(kind == MessageKind.TAG && (i & 4) != 0
                            ? SelectionKey.Operation.TAG_SEND_SYNC : kind.operation(), 0,
                    (i & 2) != 0 ? SelectionKey.DatatypeClass.IOV : SelectionKey.DatatypeClass.CONTIG,
                    (i & 1) != 0 ? SelectionKey.MemoryType.DIRECT : SelectionKey.MemoryType.HEAP,
                    protocols.locality());
        }
        this.messageIds = messageIds;
        this.defaultTag = defaultTag;
        this.shortCount = counters.traffic(EagerProtocols.SHORT.name(), transport);
        this.singleCount = counters.traffic(EagerProtocols.SINGLE_BCOPY.name(), transport);
        this.multiCount = counters.traffic(EagerProtocols.MULTI_BCOPY.name(), transport);
        this.syncSingleCount = counters.traffic(EagerProtocols.SYNC_SINGLE_BCOPY.name(), transport);
        this.syncMultiCount = counters.traffic(EagerProtocols.SYNC_MULTI_BCOPY.name(), transport);
        this.singleZcopyCount = counters.traffic(EagerProtocols.SINGLE_ZCOPY.name(), transport);
        this.multiZcopyCount = counters.traffic(EagerProtocols.MULTI_ZCOPY.name(), transport);
        this.amHeaderFallbackCount = counters.counter(RndvProtocols.AM_HEADER_FALLBACK_COUNTER);
    }

    /** The selection key of a send: its memory (isDirect, not hasArray: a composite of heap parts is heap too). */
    private static int keyIndex(ByteBuf content, boolean sync, MessageKind kind) {
        return (content.isDirect() ? 1 : 0) + (content.nioBufferCount() > 1 ? 2 : 0) + (sync ? 4 : 0)
                + kind.ordinal() * 8;
    }

    /**
     * A {@link TagMessage} (not synchronous) or a plain {@link ByteBuf} sent at once if the engine picks eager short
     * for it and the AM lane's transport takes it now ({@link EndpointServices#writeShortToLane}): then true, the
     * message counted and released, and no promise was needed. Otherwise false and {@code msg} untouched: the caller
     * sends it the ordinary way, which keeps it behind anything queued.
     */
    boolean writeShortNow(ChannelHandlerContext ctx, Object msg) {
        long tag;
        ByteBuf content;
        if (msg instanceof TagMessage m) {
            if (m.sync()) {
                return false;
            }
            tag = m.tag();
            content = m.content();
        } else if (msg instanceof ByteBuf b) {
            tag = defaultTag.getAsLong();
            content = b;
        } else {
            return false;
        }
        if (!sendShortNow(ctx, tag, content)) {
            return false;
        }
        ReferenceCountUtil.release(msg);
        return true;
    }

    /**
     * {@code content}'s readable bytes sent at once with {@code tag} if the engine picks eager short for them and the
     * AM lane's transport takes them now: then true. Either way {@code content} is untouched (indices and reference
     * count): the transport copied what it took.
     */
    boolean sendShortNow(ChannelHandlerContext ctx, long tag, ByteBuf content) {
        return sendOnlyNow(ctx, MessageKind.TAG, tag, content);
    }

    /**
     * A stream write's bytes sent at once as one STREAM_ONLY short record (tag 0, as every stream frame's) if the
     * engine picks eager short for them under {@code STREAM_SEND} and the AM lane's transport takes them now: true.
     * {@code content} stays the caller's, untouched. The stream's credit is its codec's business, not this one's.
     */
    boolean sendStreamShortNow(ChannelHandlerContext ctx, ByteBuf content) {
        return sendOnlyNow(ctx, MessageKind.STREAM, 0, content);
    }

    private boolean sendOnlyNow(ChannelHandlerContext ctx, MessageKind kind, long tag, ByteBuf content) {
        int length = content.readableBytes();
        ProtoCandidate chosen = protocols.table(keys[keyIndex(content, false, kind)]).lookup(length);
        if (chosen == null || chosen.protocol() != EagerProtocols.SHORT
                || !endpoint.writeShortToLane(kind.onlyId(), tag, content, ctx.voidPromise())) {
            return false;
        }
        shortCount.sent(length);
        return true;
    }

    /**
     * An active message's user header and data sent at once as one AM_ONLY short record with {@code tagField} if the
     * engine picks eager short for them and the AM lane's transport takes them now: true. Both buffers stay the
     * caller's, untouched. The transport takes one payload: a header is copied next to the data into a scratch buffer
     * of this sender's first (a few hundred bytes copied once more, where a composite and two slices were objects
     * per message), up to {@link #AM_SHORT_COPY_MAX} bytes in all; above that, false.
     */
    boolean sendAmShortNow(ChannelHandlerContext ctx, long tagField, ByteBuf header, ByteBuf data) {
        int headerLength = header.readableBytes();
        int length = headerLength + data.readableBytes();
        ProtoCandidate chosen = protocols.table(keys[keyIndex(data, false, MessageKind.AM)]).lookup(length);
        if (chosen == null || chosen.protocol() != EagerProtocols.SHORT
                || (headerLength > 0 && (length > AM_SHORT_COPY_MAX || ended))) {
            return false;
        }
        ByteBuf payload = data;
        if (headerLength > 0) {
            ByteBuf scratch = amScratch;
            if (scratch == null) {
                // The allocator's, with an address: copies in and out of it make no object (released in abort)
                amScratch = scratch = ctx.alloc().directBuffer(AM_SHORT_COPY_MAX, AM_SHORT_COPY_MAX);
            }
            payload = scratch.clear();
            Buffers.append(header, header.readerIndex(), payload, headerLength);
            Buffers.append(data, data.readerIndex(), payload, data.readableBytes());
        }
        if (!endpoint.writeShortToLane(MessageKind.AM.onlyId(), tagField, payload, ctx.voidPromise())) {
            return false;
        }
        shortCount.sent(length);
        return true;
    }

    /** The most header and data {@link #sendAmShortNow} copies together for one record. */
    static final int AM_SHORT_COPY_MAX = 8192;
    /** Where {@link #sendAmShortNow} puts a header and its data together; made at the first. Loop only. */
    private ByteBuf amScratch;
    /** The endpoint ended ({@link #abort}): no scratch buffer is made any more. */
    private boolean ended;

    /**
     * Sends a {@link TagMessage}, a plain {@link ByteBuf} (with the default tag), a {@link StreamData} (a stream
     * write: selected by {@code STREAM_SEND}, sent with the STREAM_* first-frame ids and tag 0) or an {@link AmData}
     * (an active message: {@code AM_SEND}, the AM_* ids); owns {@code msg}.
     */
    void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        long tag;
        ByteBuf content;
        ByteBuf amHeader = null;
        boolean sync = false;
        MessageKind kind = MessageKind.TAG;
        if (msg instanceof TagMessage m) {
            tag = m.tag();
            content = m.content();
            sync = m.sync();
        } else if (msg instanceof StreamData d) {
            tag = 0;
            content = d.content();
            kind = MessageKind.STREAM;
        } else if (msg instanceof AmData d) {
            tag = d.tagField();
            content = d.content();
            amHeader = d.header();
            kind = MessageKind.AM;
        } else {
            tag = defaultTag.getAsLong();
            content = (ByteBuf) msg;
        }
        if (!promise.setUncancellable()) { // cancelled before it was sent: nothing goes out
            ReferenceCountUtil.release(msg);
            return;
        }
        // From here a send cannot be taken back: Netty drops a write whose promise is cancelled, and the frame the
        // promise rides on (the last fragment, an ATP) would be lost with the message half sent.
        ByteBuf eager = content; // what eager frames carry: an active message's user header, then its data
        try {
            int length = content.readableBytes();
            if (amHeader != null && amHeader.isReadable()) {
                length += amHeader.readableBytes();
                eager = ctx.alloc().compositeBuffer(2).addComponents(true, amHeader.retainedSlice(),
                        content.retainedSlice());
            }
            int keyIndex = keyIndex(content, sync, kind);
            ProtoCandidate chosen = protocols.table(keys[keyIndex]).lookup(length);
            Protocol p = chosen == null ? null : chosen.protocol();
            if (amHeader != null && (p == RndvProtocols.TAG_RNDV || p == RndvProtocols.PUT_ZCOPY
                    || p == RndvProtocols.GET_ZCOPY)
                    && RndvHeaders.RTS_LENGTH + amHeader.readableBytes() > lane.maxBcopy()) {
                // The RTS carries the user header in its one frame, which this lane cannot hold (the send waited for
                // an answer that never came): the message goes eagerly in fragments instead, if it may.
                if (protocols.table(keys[keyIndex]).candidates().stream()
                        .noneMatch(c -> c.protocol() == EagerProtocols.MULTI_BCOPY)) {
                    promise.tryFailure(new IllegalStateException("an active message's user header of "
                            + amHeader.readableBytes() + " bytes does not fit a rendezvous RTS on "
                            + protocols.config().amLane() + " (frames of at most " + lane.maxBcopy()
                            + " bytes), and egr/multi/bcopy, which would carry it, is not enabled (NUCX_PROTOS)"));
                    return;
                }
                p = EagerProtocols.MULTI_BCOPY;
                amHeaderFallbackCount.increment();
            }
            if (p == EagerProtocols.SHORT || p == EagerProtocols.SINGLE_BCOPY) {
                (p == EagerProtocols.SHORT ? shortCount : singleCount).sent(length);
                // The tag is the whole header: a transport that copies as it writes takes it as a number, no frame.
                if (p == EagerProtocols.SHORT && endpoint.writeShortToLane(kind.onlyId(), tag, eager, promise)) {
                    return;
                }
                ByteBuf header = ctx.alloc().buffer(EagerHeaders.ONLY_LENGTH).writeLongLE(tag);
                endpoint.writeFrame(ctx, AmFrame.of(kind.onlyId(), 0, header,
                        copyPayload(ctx, eager, eager.readerIndex(), length)), promise);
            } else if (p == EagerProtocols.MULTI_BCOPY) {
                multiCount.sent(length);
                writeFragments(ctx, kind.firstId(), tag, eager, length, -1, true, promise);
            } else if (p == EagerProtocols.SINGLE_ZCOPY || p == EagerProtocols.MULTI_ZCOPY) {
                writeZcopy(ctx, tag, eager, length, p == EagerProtocols.MULTI_ZCOPY, kind, promise);
            } else if (p == EagerProtocols.SYNC_SINGLE_BCOPY || p == EagerProtocols.SYNC_MULTI_BCOPY) {
                writeSync(ctx, tag, content, length, p == EagerProtocols.SYNC_MULTI_BCOPY, promise);
            } else if (p == RndvProtocols.TAG_RNDV || p == RndvProtocols.PUT_ZCOPY) {
                // put/zcopy's RTS is tag/rndv's: the receiver answers with its buffer's key. Counted by the RndvSender,
                // which knows what its RTS offers.
                ctx.write(new RndvSendRequest(tag, content.retain(), false, kind, rtsPayload(ctx, amHeader)), promise);
            } else if (p == RndvProtocols.GET_ZCOPY) {
                // A key only for one run of native memory (offersKey): for heap or scattered data the receiver
                // asks by RTR
                ctx.write(new RndvSendRequest(tag, content.retain(), RndvSendRequest.offersKey(content), kind,
                        rtsPayload(ctx, amHeader)), promise);
            } else {
                promise.tryFailure(new IllegalStateException("no protocol sends a " + length + "-byte "
                        + SelectionKey.describe(keys[keyIndex]) + " on " + protocols.config().amLane()
                        + (p == null ? "" : " (selected " + p.name() + ", which this codec does not run)")));
            }
        } finally {
            if (eager != content) {
                eager.release();
            }
            ReferenceCountUtil.release(msg);
        }
    }

    /**
     * What an active message's RTS carries after its header: the user header, copied where the AM lane hands frames
     * over as they are (self), since the receiver's message holds it until released, after the send has completed.
     */
    private ByteBuf rtsPayload(ChannelHandlerContext ctx, ByteBuf amHeader) {
        return amHeader == null ? null : copyPayload(ctx, amHeader, amHeader.readerIndex(), amHeader.readableBytes());
    }

    /**
     * A synchronous eager send: the frames carry the request id, the user's promise waits for EAGER_SYNC_ACK; if the
     * data cannot be written the promise fails at once.
     */
    private void writeSync(ChannelHandlerContext ctx, long tag, ByteBuf content, int length, boolean multi,
                           ChannelPromise promise) {
        AckedSend written = new AckedSend(ctx, syncSends, tag, length, promise);
        long id = written.id;
        if (multi) {
            syncMultiCount.sent(length);
            writeFragments(ctx, AmIds.EAGER_SYNC_FIRST, tag, content, length, id, true, written);
        } else {
            syncSingleCount.sent(length);
            ByteBuf header = ctx.alloc().buffer(EagerHeaders.SYNC_ONLY_LENGTH).writeLongLE(tag).writeLongLE(id);
            endpoint.writeFrame(ctx, AmFrame.of(AmIds.EAGER_SYNC_ONLY, 0, header,
                    copyPayload(ctx, content, content.readerIndex(), length)), written);
        }
    }

    /**
     * A zero-copy eager send: the frames carry slices of the user's buffer and this endpoint's request id; the user's
     * promise waits for EAGER_ZCOPY_ACK. If the data cannot be written the promise fails at once, and the transport
     * releases the slices it holds.
     */
    private void writeZcopy(ChannelHandlerContext ctx, long tag, ByteBuf content, int length, boolean multi,
                            MessageKind kind, ChannelPromise promise) {
        AckedSend written = new AckedSend(ctx, zcopySends, tag, length, promise);
        long id = written.id;
        if (multi) {
            multiZcopyCount.sent(length);
            writeFragments(ctx, kind.zcopyFirstId(), tag, content, length, id, false, written);
        } else {
            singleZcopyCount.sent(length);
            ByteBuf header = ctx.alloc().buffer(EagerHeaders.ZCOPY_ONLY_LENGTH).writeLongLE(tag).writeLongLE(id);
            endpoint.writeFrame(ctx, AmFrame.of(kind.zcopyOnlyId(), 0, header, content.retainedSlice()), written);
        }
    }

    /**
     * FIRST then MIDDLE frames. {@code reqId >= 0} (EAGER_SYNC_FIRST, EAGER_ZCOPY_FIRST) goes at the end of the
     * FIRST header. {@code copy}: the payloads of a copy protocol, copied where the transport would not.
     */
    private void writeFragments(ChannelHandlerContext ctx, int firstAmId, long tag, ByteBuf content, int length,
                                long reqId, boolean copy, ChannelPromise promise) {
        long msgId = messageIds.getAsLong();
        int start = content.readerIndex();
        int firstLength = switch (firstAmId) {
            case AmIds.EAGER_FIRST, AmIds.STREAM_FIRST, AmIds.AM_FIRST -> EagerHeaders.FIRST_LENGTH;
            case AmIds.EAGER_SYNC_FIRST -> EagerHeaders.SYNC_FIRST_LENGTH;
            default -> EagerHeaders.ZCOPY_FIRST_LENGTH;
        };
        int first0 = firstPayload - (firstLength - EagerHeaders.FIRST_LENGTH);
        ByteBuf first = ctx.alloc().buffer(firstLength).writeLongLE(tag).writeLongLE(length).writeLongLE(msgId);
        if (reqId >= 0) {
            first.writeLongLE(reqId);
        }
        first0 = Math.min(first0, length); // NUCX_PROTOS may leave this protocol for small messages too
        // Where copies are the transfer (shm), as many fragments as the largest would make, of even size: 64 KiB went
        // as 65,512 B and 24 B, so the receiver copied nothing out while the sender copied in; as two halves it copies
        // the first out while the second goes in (shm tag_lat 64 KiB: 1.85-1.90 us against 2.10-2.14, UCX posix
        // 1.89-1.96; BENCHMARKS.md). Over tcp it showed no gain (128 KiB: 40 us against 31-35, where two runs of the
        // same code differ by 1.6x): tcp keeps the largest frames.
        int middle = middlePayload;
        if (length > first0 && lane.copiesAreTheTransfer()) {
            int fragments = 1 + (length - first0 + middlePayload - 1) / middlePayload;
            first0 = Math.min(first0, (int) (((long) length + fragments - 1) / fragments));
            middle = (length - first0 + fragments - 2) / (fragments - 1); // the rest in fragments - 1 even parts
        }
        endpoint.writeFrame(ctx, AmFrame.of(firstAmId, 0, first, copy ? copyPayload(ctx, content, start, first0)
                : content.retainedSlice(start, first0)), first0 == length ? promise : ProtocolCodec.quietPromise(ctx));
        for (int offset = first0; offset < length; offset += middle) {
            int n = Math.min(middle, length - offset);
            ByteBuf header = ctx.alloc().buffer(EagerHeaders.MIDDLE_LENGTH).writeLongLE(msgId).writeLongLE(offset);
            boolean last = offset + n == length;
            ByteBuf part = copy ? copyPayload(ctx, content, start + offset, n) : content.retainedSlice(start + offset, n);
            endpoint.writeFrame(ctx, AmFrame.of(AmIds.EAGER_MIDDLE, 0, header, part),
                    last ? promise : ProtocolCodec.quietPromise(ctx));
        }
    }

    /**
     * A copy protocol's payload: the message itself (or a slice of it, for one fragment) when the user's buffer is
     * free once the lane's write completes (shm's ring copies it, tcp's socket too), else a copy in a pooled heap
     * buffer (self, which hands frames over as they are; the copy-in the cost model charges), so the frame no longer
     * refers to the user's buffer. The whole message goes as the buffer itself, not a slice: with Netty's default
     * allocator a slice is an object per message, and a written buffer is nucx's to read (Netty's rule for every
     * write).
     */
    private ByteBuf copyPayload(ChannelHandlerContext ctx, ByteBuf content, int index, int length) {
        // tcp writes native payloads from our buffer, and the write completes once the socket has copied them into the
        // kernel: a copy of ours first cost 15-25 % of tag_lat at 128-512 KiB (a cold pooled destination; BENCHMARKS)
        if (lane.freesPayloadOnWrite(length, !content.isDirect())) {
            return index == content.readerIndex() && length == content.readableBytes() ? content.retain()
                    : content.retainedSlice(index, length);
        }
        ByteBuf copy = ctx.alloc().heapBuffer(length, length);
        Buffers.copy(content, index, copy, 0, length);
        return copy.writerIndex(length);
    }

    /** EAGER_SYNC_ACK: the receiver matched the message (or refused it as too long for its buffer). */
    void onSyncAck(long id, int status) {
        AckedSend s = syncSends.remove(id);
        if (s == null) {
            throw new ProtocolException("EAGER_SYNC_ACK for unknown synchronous send " + id);
        }
        if (status == RndvHeaders.STATUS_OK) {
            s.promise.trySuccess();
        } else if (status == RndvHeaders.STATUS_TRUNCATED) {
            s.promise.tryFailure(new MessageTruncatedException(s.tag, s.length, -1));
        } else {
            s.promise.tryFailure(new ProtocolException("synchronous send " + id + " ended with status " + status));
        }
    }

    /** EAGER_ZCOPY_ACK: the receiver has the whole zero-copy message. */
    void onZcopyAck(long id) {
        AckedSend s = zcopySends.remove(id);
        if (s == null) {
            throw new ProtocolException("EAGER_ZCOPY_ACK for unknown zero-copy send " + id);
        }
        s.promise.trySuccess();
    }

    /** The sends still waiting for the receiver (a graceful close waits for them). */
    void collectOutstanding(List<Future<?>> out) {
        syncSends.values().forEach(s -> out.add(s.user()));
        zcopySends.values().forEach(s -> out.add(s.user()));
    }

    /** The endpoint ended: the waiting sends fail (whether the peer has the data is unknown). */
    void abort(Throwable cause) {
        syncSends.takeAll().forEach(s -> s.promise.tryFailure(cause));
        zcopySends.takeAll().forEach(s -> s.promise.tryFailure(cause));
        ended = true;
        if (amScratch != null) {
            amScratch.release();
            amScratch = null;
        }
    }

    int waiting() {
        return syncSends.size() + zcopySends.size();
    }

    int syncWaiting() {
        return syncSends.size();
    }

    int zcopyWaiting() {
        return zcopySends.size();
    }
}
