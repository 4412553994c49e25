package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.EndpointConfig;
import io.nucx.protocol.ProtocolCounters;
import io.nucx.protocol.select.ProtoCandidate;
import io.nucx.protocol.select.Protocol;
import io.nucx.protocol.select.SelectionCache;
import io.nucx.protocol.select.SelectionKey;
import io.nucx.transport.AmFrame;
import io.nucx.transport.IfaceAttributes;

import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;

/**
 * Turns outbound {@link TagMessage}s (and plain {@link ByteBuf}s, sent with the endpoint's default tag) into eager
 * active messages on the endpoint's AM lane, with the protocol the endpoint's {@link SelectionCache} table gives for
 * the message's key and size ({@link EagerProtocols}):
 * <ul>
 *   <li>{@code egr/short}: one EAGER_ONLY frame when the payload fits the lane's max short;</li>
 *   <li>{@code egr/single/bcopy}: one EAGER_ONLY frame up to the lane's max bcopy;</li>
 *   <li>{@code egr/multi/bcopy}: an EAGER_FIRST frame then EAGER_MIDDLE frames, each at most max bcopy;</li>
 *   <li>{@code egr/single/zcopy}, {@code egr/multi/zcopy}: the same frames as EAGER_ZCOPY_ONLY / EAGER_ZCOPY_FIRST
 *       with this worker's request id; the send waits in {@link ZcopySends} for the receiver's EAGER_ZCOPY_ACK;</li>
 *   <li>{@code tag/rndv}: handed down as a {@link RndvSendRequest} to {@link RndvTagSendHandler};</li>
 *   <li>{@code rndv/get/zcopy}: the same, asking it to put the buffer's remote key in the RTS;</li>
 *   <li>{@code rndv/put/zcopy}: as {@code tag/rndv} (counted as such); the receiver's RTR brings its key.</li>
 * </ul>
 * The copy protocols' payloads are copied into pooled buffers (copy-in) when the lane's transport would not copy them
 * itself ({@link IfaceAttributes#copiesAmPayload}; see {@link EagerProtocols}), otherwise they are slices of the
 * message; the zero-copy protocols always send slices. A copy send's promise rides on the last fragment, so it
 * completes when the whole message has left; a zero-copy send's when the receiver acknowledged it. Earlier fragments
 * carry the void promise: a lane whose write fails closes, and with it every later fragment fails, so the send's
 * promise fails too.
 */
public final class EagerTagSendHandler extends ChannelOutboundHandlerAdapter {

    public static final String EGR_SHORT = "egr/short";
    public static final String EGR_SINGLE_BCOPY = "egr/single/bcopy";
    public static final String EGR_MULTI_BCOPY = "egr/multi/bcopy";
    public static final String EGR_SINGLE_ZCOPY = "egr/single/zcopy";
    public static final String EGR_MULTI_ZCOPY = "egr/multi/zcopy";
    public static final String TAG_RNDV = "tag/rndv";
    public static final String RNDV_GET_ZCOPY = "rndv/get/zcopy";

    private final int firstPayload;
    private final int middlePayload;
    private final SelectionCache protocols;
    private final IfaceAttributes lane;
    /** Keys by [sync][iov][direct]: built once, so a send costs an index and a table lookup. */
    private final long[] keys = new long[8];
    private final LongSupplier messageIds;
    private final LongSupplier defaultTag;
    private final LongAdder shortCount;
    private final LongAdder singleCount;
    private final LongAdder multiCount;
    private final LongAdder rndvCount;
    private final LongAdder getZcopyCount;
    private final LongAdder syncSingleCount;
    private final LongAdder syncMultiCount;
    private final LongAdder singleZcopyCount;
    private final LongAdder multiZcopyCount;
    private final SyncSends syncSends;
    private final ZcopySends zcopySends;

    /** A handler selecting among {@link EagerProtocols#ALL} by cost alone, with a cache of its own. */
    public EagerTagSendHandler(EndpointConfig config, LongSupplier messageIds, LongSupplier defaultTag,
                               ProtocolCounters counters) {
        this(new SelectionCache(EagerProtocols.ALL, config, SelectionKey.Locality.INTER_NODE, ProtoCandidate.AUTO,
                ProtoCandidate.AUTO, null), messageIds, defaultTag, counters, new SyncSends(), new ZcopySends());
    }

    /** A handler whose zero-copy sends (if its table selects any) wait in a registry of their own. */
    public EagerTagSendHandler(SelectionCache protocols, LongSupplier messageIds, LongSupplier defaultTag,
                               ProtocolCounters counters, SyncSends syncSends) {
        this(protocols, messageIds, defaultTag, counters, syncSends, new ZcopySends());
    }

    /**
     * @param protocols  the protocol tables of the endpoint's configuration (shared with like endpoints)
     * @param messageIds the worker's message-id source (unique per sender)
     * @param defaultTag the tag of plain {@link ByteBuf} writes, read at each write
     * @param syncSends  the worker's synchronous sends waiting for acknowledgement of the match
     * @param zcopySends the worker's zero-copy sends waiting for acknowledgement of the arrival
     */
    public EagerTagSendHandler(SelectionCache protocols, LongSupplier messageIds, LongSupplier defaultTag,
                               ProtocolCounters counters, SyncSends syncSends, ZcopySends zcopySends) {
        this.syncSends = syncSends;
        this.zcopySends = zcopySends;
        EndpointConfig config = protocols.config();
        this.lane = config.amLaneAttrs();
        int maxBcopy = config.amLaneAttrs().maxBcopy();
        if (maxBcopy <= EagerHeaders.FIRST_LENGTH) {
            throw new IllegalArgumentException("AM lane " + config.amLane() + " max bcopy " + maxBcopy
                    + " leaves no room for eager payload");
        }
        // A frame's size limit counts header and payload, as UCT's max_short/max_bcopy do.
        this.firstPayload = maxBcopy - EagerHeaders.FIRST_LENGTH;
        this.middlePayload = maxBcopy - EagerHeaders.MIDDLE_LENGTH;
        this.protocols = protocols;
        for (int i = 0; i < keys.length; i++) {
            keys[i] = SelectionKey.pack((i & 4) != 0 ? SelectionKey.Operation.TAG_SEND_SYNC
                            : SelectionKey.Operation.TAG_SEND, 0,
                    (i & 2) != 0 ? SelectionKey.DatatypeClass.IOV : SelectionKey.DatatypeClass.CONTIG,
                    (i & 1) != 0 ? SelectionKey.MemoryType.DIRECT : SelectionKey.MemoryType.HEAP,
                    protocols.locality());
        }
        this.messageIds = messageIds;
        this.defaultTag = defaultTag;
        this.shortCount = counters.counter(EGR_SHORT);
        this.singleCount = counters.counter(EGR_SINGLE_BCOPY);
        this.multiCount = counters.counter(EGR_MULTI_BCOPY);
        this.rndvCount = counters.counter(TAG_RNDV);
        this.getZcopyCount = counters.counter(RNDV_GET_ZCOPY);
        this.syncSingleCount = counters.counter(EagerProtocols.SYNC_SINGLE_BCOPY.name());
        this.syncMultiCount = counters.counter(EagerProtocols.SYNC_MULTI_BCOPY.name());
        this.singleZcopyCount = counters.counter(EGR_SINGLE_ZCOPY);
        this.multiZcopyCount = counters.counter(EGR_MULTI_ZCOPY);
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        long tag;
        ByteBuf content;
        boolean sync = false;
        if (msg instanceof TagMessage m) {
            tag = m.tag();
            content = m.content();
            sync = m.sync();
        } else if (msg instanceof ByteBuf b) {
            tag = defaultTag.getAsLong();
            content = b;
        } else {
            ctx.write(msg, promise);
            return;
        }
        if (!promise.setUncancellable()) { // cancelled before it was sent: nothing goes out
            io.netty.util.ReferenceCountUtil.release(msg);
            return;
        }
        // From here a send cannot be taken back: Netty drops a write whose promise is cancelled, and the frame the
        // promise rides on (the last fragment, an ATP) would be lost with the message half sent.
        try {
            int length = content.readableBytes();
            // isDirect, not hasArray: a composite of heap components is heap memory too (no array of its own).
            int keyIndex = (content.isDirect() ? 1 : 0) + (content.nioBufferCount() > 1 ? 2 : 0) + (sync ? 4 : 0);
            ProtoCandidate chosen = protocols.table(keys[keyIndex]).lookup(length);
            Protocol p = chosen == null ? null : chosen.protocol();
            if (p == EagerProtocols.SHORT || p == EagerProtocols.SINGLE_BCOPY) {
                ByteBuf header = ctx.alloc().buffer(EagerHeaders.ONLY_LENGTH).writeLongLE(tag);
                (p == EagerProtocols.SHORT ? shortCount : singleCount).increment();
                ctx.write(AmFrame.of(AmIds.EAGER_ONLY, 0, header,
                        copyPayload(ctx, content, content.readerIndex(), length)), promise);
            } else if (p == EagerProtocols.MULTI_BCOPY) {
                multiCount.increment();
                writeFragments(ctx, AmIds.EAGER_FIRST, tag, content, length, -1, true, promise);
            } else if (p == EagerProtocols.SINGLE_ZCOPY || p == EagerProtocols.MULTI_ZCOPY) {
                writeZcopy(ctx, tag, content, length, p == EagerProtocols.MULTI_ZCOPY, promise);
            } else if (p == EagerProtocols.SYNC_SINGLE_BCOPY || p == EagerProtocols.SYNC_MULTI_BCOPY) {
                writeSync(ctx, tag, content, length, p == EagerProtocols.SYNC_MULTI_BCOPY, promise);
            } else if (p == RndvProtocols.TAG_RNDV || p == RndvProtocols.PUT_ZCOPY) {
                // put/zcopy's RTS is tag/rndv's: the receiver answers with its buffer's key, and RndvSends writes
                rndvCount.increment();
                ctx.write(new RndvSendRequest(tag, content.retain()), promise); // RndvTagSendHandler, below us
            } else if (p == RndvProtocols.GET_ZCOPY) {
                if (RndvTagSendHandler.exposable(content)) {
                    getZcopyCount.increment();
                    ctx.write(new RndvSendRequest(tag, content.retain(), true), promise);
                } else { // direct but not one native run (e.g. a read-only view): the receiver asks by RTR
                    rndvCount.increment();
                    ctx.write(new RndvSendRequest(tag, content.retain()), promise);
                }
            } else {
                promise.tryFailure(new IllegalStateException("no protocol sends a " + length + "-byte "
                        + SelectionKey.describe(keys[keyIndex]) + " on " + protocols.config().amLane()
                        + (p == null ? "" : " (selected " + p.name() + ", which this handler does not run)")));
            }
        } finally {
            io.netty.util.ReferenceCountUtil.release(msg);
        }
    }

    /**
     * A synchronous eager send: the frames carry the request id, the user's promise waits in {@link SyncSends} for
     * EAGER_SYNC_ACK; if the data cannot be written the promise fails at once.
     */
    private void writeSync(ChannelHandlerContext ctx, long tag, ByteBuf content, int length, boolean multi,
                           ChannelPromise promise) {
        long id = syncSends.add(tag, length, ctx.channel(), promise);
        ChannelPromise written = ctx.newPromise();
        written.addListener(f -> {
            if (!f.isSuccess()) {
                syncSends.failed(id, f.cause());
            }
        });
        if (multi) {
            syncMultiCount.increment();
            writeFragments(ctx, AmIds.EAGER_SYNC_FIRST, tag, content, length, id, true, written);
        } else {
            syncSingleCount.increment();
            ByteBuf header = ctx.alloc().buffer(EagerHeaders.SYNC_ONLY_LENGTH).writeLongLE(tag).writeLongLE(id);
            ctx.write(AmFrame.of(AmIds.EAGER_SYNC_ONLY, 0, header,
                    copyPayload(ctx, content, content.readerIndex(), length)), written);
        }
    }

    /**
     * A zero-copy eager send: the frames carry slices of the user's buffer and this worker's request id; the user's
     * promise waits in {@link ZcopySends} for EAGER_ZCOPY_ACK. If the data cannot be written the promise fails at
     * once, and the transport releases the slices it holds.
     */
    private void writeZcopy(ChannelHandlerContext ctx, long tag, ByteBuf content, int length, boolean multi,
                            ChannelPromise promise) {
        // A void promise cannot be waited for (a graceful close waits for these): a real one that still reports a
        // failure to the pipeline as the void promise would.
        long id = zcopySends.add(ctx.channel(), promise.isVoid() ? promise.unvoid() : promise);
        ChannelPromise written = ctx.newPromise();
        written.addListener(f -> {
            if (!f.isSuccess()) {
                zcopySends.failed(id, f.cause());
            }
        });
        if (multi) {
            multiZcopyCount.increment();
            writeFragments(ctx, AmIds.EAGER_ZCOPY_FIRST, tag, content, length, id, false, written);
        } else {
            singleZcopyCount.increment();
            ByteBuf header = ctx.alloc().buffer(EagerHeaders.ZCOPY_ONLY_LENGTH).writeLongLE(tag).writeLongLE(id);
            ctx.write(AmFrame.of(AmIds.EAGER_ZCOPY_ONLY, 0, header, content.retainedSlice()), written);
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
            case AmIds.EAGER_FIRST -> EagerHeaders.FIRST_LENGTH;
            case AmIds.EAGER_SYNC_FIRST -> EagerHeaders.SYNC_FIRST_LENGTH;
            default -> EagerHeaders.ZCOPY_FIRST_LENGTH;
        };
        int first0 = firstPayload - (firstLength - EagerHeaders.FIRST_LENGTH);
        ByteBuf first = ctx.alloc().buffer(firstLength).writeLongLE(tag).writeLongLE(length).writeLongLE(msgId);
        if (reqId >= 0) {
            first.writeLongLE(reqId);
        }
        first0 = Math.min(first0, length); // NUCX_PROTOS may leave this protocol for small messages too
        ctx.write(AmFrame.of(firstAmId, 0, first, copy ? copyPayload(ctx, content, start, first0)
                : content.retainedSlice(start, first0)), first0 == length ? promise : ctx.voidPromise());
        for (int offset = first0; offset < length; offset += middlePayload) {
            int n = Math.min(middlePayload, length - offset);
            ByteBuf header = ctx.alloc().buffer(EagerHeaders.MIDDLE_LENGTH).writeLongLE(msgId).writeLongLE(offset);
            boolean last = offset + n == length;
            ctx.write(AmFrame.of(AmIds.EAGER_MIDDLE, 0, header, copy ? copyPayload(ctx, content, start + offset, n)
                    : content.retainedSlice(start + offset, n)), last ? promise : ctx.voidPromise());
        }
    }

    /**
     * A copy protocol's payload: a slice when the lane's transport copies it into memory of its own as it is written
     * (shm's ring, tcp's small and heap payloads), else a copy in a pooled direct buffer (the copy-in the cost model
     * charges), so the frame no longer refers to the user's buffer.
     */
    private ByteBuf copyPayload(ChannelHandlerContext ctx, ByteBuf content, int index, int length) {
        if (lane.copiesAmPayload(length, !content.isDirect())) {
            return content.retainedSlice(index, length);
        }
        return ctx.alloc().directBuffer(length, length).writeBytes(content, index, length);
    }
}
