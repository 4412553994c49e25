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
 *   <li>{@code tag/rndv}: handed down as a {@link RndvSendRequest} to {@link RndvTagSendHandler};</li>
 *   <li>{@code rndv/get/zcopy}: the same, asking it to put the buffer's remote key in the RTS;</li>
 *   <li>{@code rndv/put/zcopy}: as {@code tag/rndv} (counted as such); the receiver's RTR brings its key.</li>
 * </ul>
 * Fragments are slices of the message (no copy); the send's promise rides on the last fragment, so it completes when
 * the whole message has left (the buffer is reusable). Earlier fragments carry the void promise: a lane whose write
 * fails closes, and with it every later fragment fails, so the send's promise fails too.
 */
public final class EagerTagSendHandler extends ChannelOutboundHandlerAdapter {

    public static final String EGR_SHORT = "egr/short";
    public static final String EGR_SINGLE_BCOPY = "egr/single/bcopy";
    public static final String EGR_MULTI_BCOPY = "egr/multi/bcopy";
    public static final String TAG_RNDV = "tag/rndv";
    public static final String RNDV_GET_ZCOPY = "rndv/get/zcopy";

    private final int firstPayload;
    private final int middlePayload;
    private final SelectionCache protocols;
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
    private final SyncSends syncSends;

    /** A handler selecting among {@link EagerProtocols#ALL} by cost alone, with a cache of its own. */
    public EagerTagSendHandler(EndpointConfig config, LongSupplier messageIds, LongSupplier defaultTag,
                               ProtocolCounters counters) {
        this(new SelectionCache(EagerProtocols.ALL, config, SelectionKey.Locality.INTER_NODE, ProtoCandidate.AUTO,
                ProtoCandidate.AUTO, null), messageIds, defaultTag, counters, new SyncSends());
    }

    /**
     * @param protocols  the protocol tables of the endpoint's configuration (shared with like endpoints)
     * @param messageIds the worker's message-id source (unique per sender)
     * @param defaultTag the tag of plain {@link ByteBuf} writes, read at each write
     * @param syncSends  the worker's synchronous sends waiting for acknowledgement
     */
    public EagerTagSendHandler(SelectionCache protocols, LongSupplier messageIds, LongSupplier defaultTag,
                               ProtocolCounters counters, SyncSends syncSends) {
        this.syncSends = syncSends;
        EndpointConfig config = protocols.config();
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
        try {
            int length = content.readableBytes();
            int keyIndex = (content.hasArray() ? 0 : 1) + (content.nioBufferCount() > 1 ? 2 : 0) + (sync ? 4 : 0);
            ProtoCandidate chosen = protocols.table(keys[keyIndex]).lookup(length);
            Protocol p = chosen == null ? null : chosen.protocol();
            if (p == EagerProtocols.SHORT || p == EagerProtocols.SINGLE_BCOPY) {
                ByteBuf header = ctx.alloc().buffer(EagerHeaders.ONLY_LENGTH).writeLongLE(tag);
                (p == EagerProtocols.SHORT ? shortCount : singleCount).increment();
                ctx.write(AmFrame.of(AmIds.EAGER_ONLY, 0, header, content.retainedSlice()), promise);
            } else if (p == EagerProtocols.MULTI_BCOPY) {
                multiCount.increment();
                writeFragments(ctx, tag, content, length, promise);
            } else if (p == EagerProtocols.SYNC_SINGLE_BCOPY || p == EagerProtocols.SYNC_MULTI_BCOPY) {
                writeSync(ctx, tag, content, length, p == EagerProtocols.SYNC_MULTI_BCOPY, promise);
            } else if (p == RndvProtocols.TAG_RNDV || p == RndvProtocols.PUT_ZCOPY) {
                // put/zcopy's RTS is tag/rndv's: the receiver answers with its buffer's key, and RndvSends writes
                rndvCount.increment();
                ctx.write(new RndvSendRequest(tag, content.retain()), promise); // RndvTagSendHandler, below us
            } else if (p == RndvProtocols.GET_ZCOPY) {
                if (RndvTagSendHandler.remoteKey(content) != null) {
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
            writeFragments(ctx, tag, content, length, id, written);
        } else {
            syncSingleCount.increment();
            ByteBuf header = ctx.alloc().buffer(EagerHeaders.SYNC_ONLY_LENGTH).writeLongLE(tag).writeLongLE(id);
            ctx.write(AmFrame.of(AmIds.EAGER_SYNC_ONLY, 0, header, content.retainedSlice()), written);
        }
    }

    private void writeFragments(ChannelHandlerContext ctx, long tag, ByteBuf content, int length,
                                ChannelPromise promise) {
        writeFragments(ctx, tag, content, length, -1, promise);
    }

    /** FIRST then MIDDLE frames; a synchronous send ({@code syncId >= 0}) starts with EAGER_SYNC_FIRST. */
    private void writeFragments(ChannelHandlerContext ctx, long tag, ByteBuf content, int length, long syncId,
                                ChannelPromise promise) {
        long msgId = messageIds.getAsLong();
        int start = content.readerIndex();
        boolean sync = syncId >= 0;
        int firstLength = sync ? EagerHeaders.SYNC_FIRST_LENGTH : EagerHeaders.FIRST_LENGTH;
        int first0 = sync ? firstPayload - (EagerHeaders.SYNC_FIRST_LENGTH - EagerHeaders.FIRST_LENGTH) : firstPayload;
        ByteBuf first = ctx.alloc().buffer(firstLength).writeLongLE(tag).writeLongLE(length).writeLongLE(msgId);
        if (sync) {
            first.writeLongLE(syncId);
        }
        first0 = Math.min(first0, length); // NUCX_PROTOS may leave this protocol for small messages too
        ctx.write(AmFrame.of(sync ? AmIds.EAGER_SYNC_FIRST : AmIds.EAGER_FIRST, 0, first,
                content.retainedSlice(start, first0)), first0 == length ? promise : ctx.voidPromise());
        for (int offset = first0; offset < length; offset += middlePayload) {
            int n = Math.min(middlePayload, length - offset);
            ByteBuf header = ctx.alloc().buffer(EagerHeaders.MIDDLE_LENGTH).writeLongLE(msgId).writeLongLE(offset);
            boolean last = offset + n == length;
            ctx.write(AmFrame.of(AmIds.EAGER_MIDDLE, 0, header, content.retainedSlice(start + offset, n)),
                    last ? promise : ctx.voidPromise());
        }
    }
}
