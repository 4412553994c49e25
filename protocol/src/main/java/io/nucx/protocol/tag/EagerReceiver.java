package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.ChannelHandlerContext;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.ProtocolCodec;
import io.nucx.protocol.ProtocolException;
import io.nucx.protocol.am.AmHeaders;
import io.nucx.protocol.am.AmIncoming;
import io.nucx.protocol.stream.StreamSlot;
import io.nucx.transport.AmFrame;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongPredicate;

/**
 * The receive side of the eager tag protocols on one endpoint: parses EAGER_ONLY / FIRST / MIDDLE and their
 * synchronous and zero-copy variants ({@link EagerHeaders}), puts multi-fragment messages together, and hands each
 * message where its first frame decided: a posted receive (from the worker's {@link TagMatcher}, straight into the
 * user's buffer when it gave one), the endpoint's pipeline ({@code PIPELINE_TAG}; a {@link PipelineSlot} holds its
 * place while fragments arrive), or the unexpected queue. Synchronous senders are acknowledged at the match, zero-copy
 * senders once every byte has arrived. Stream writes (STREAM_ONLY, STREAM_FIRST, STREAM_ZCOPY_*) go to the endpoint's
 * stream instead, never to the matcher: a {@link StreamSlot} up the pipeline, completed as their fragments arrive.
 * Active messages (AM_ONLY, AM_FIRST, AM_ZCOPY_*) go up the pipeline as an {@link AmIncoming} once whole. A
 * header of the wrong length, a message over NUCX_MAX_MSG_SIZE, a fragment
 * outside its message or of an unknown message is a {@link ProtocolException}: the lane it came by closes.
 */
final class EagerReceiver {

    /** A multi-fragment message being put together. */
    private static final class Reassembly {
        final long msgId;
        final long tag;
        final int total;
        /** A {@link TagReceive}, an {@link Arrival}, a {@link PipelineSlot}, a {@link StreamSlot}, or null. */
        Object target;
        ByteBuf buffer;
        /** The buffer is a slice of the receive's own buffer: complete in place. */
        boolean inPlace;
        int received;
        /** A zero-copy message's sender request id, acknowledged once every byte has arrived; -1 otherwise. */
        final long zcopyReqId;

        Reassembly(long msgId, long tag, int total, long zcopyReqId) {
            this.msgId = msgId;
            this.tag = tag;
            this.total = total;
            this.zcopyReqId = zcopyReqId;
        }
    }

    /** An eager message nobody has received yet: whole ({@code data}), or still arriving ({@code reassembly}). */
    private final class Arrival extends TagArrival {
        ByteBuf data;
        Reassembly reassembly;
        /** A synchronous message: the sender waits for the acknowledgement of the match; -1 otherwise. */
        final long syncReqId;
        final long size;

        Arrival(long tag, long size, long syncReqId) {
            super(tag);
            this.size = size;
            this.syncReqId = syncReqId;
        }

        @Override
        protected void matched(TagReceive r) {
            if (syncReqId >= 0) {
                acknowledgeMatch(syncReqId, r, size);
            }
            if (data != null) {
                ByteBuf d = data;
                data = null;
                r.deliver(tag(), d);
            } else {
                r.claim(); // its buffer takes the fragments still to come: no taking it back
                reassembly.target = r;
            }
        }

        @Override
        protected void discard() {
            if (data != null) {
                data.release();
                data = null;
            }
            if (reassembly != null) {
                reassembly.target = null; // the rest of it is dropped as it arrives
            }
        }
    }

    /** The target of an active message being put together: it goes up the pipeline once whole. */
    private static final Object AM_TARGET = new Object();

    private final ChannelHandlerContext ctx;
    private final TagMatcher matcher;
    private final ByteBufAllocator alloc;
    private final long maxMessageSize;
    private final LongPredicate toPipeline;
    private final EagerSender sender;
    private final Map<Long, Reassembly> reassemblies = new HashMap<>();

    /**
     * @param toPipeline whether a message of a tag no posted receive wants goes up the endpoint's pipeline
     * @param sender     takes the acknowledgements of this endpoint's own synchronous and zero-copy sends
     */
    EagerReceiver(ChannelHandlerContext ctx, TagMatcher matcher, ByteBufAllocator alloc, long maxMessageSize,
                  LongPredicate toPipeline, EagerSender sender) {
        this.ctx = ctx;
        this.matcher = matcher;
        this.alloc = alloc;
        this.maxMessageSize = maxMessageSize;
        this.toPipeline = toPipeline;
        this.sender = sender;
    }

    /** Handles one eager frame; releases it. */
    void onFrame(AmFrame frame) {
        try {
            ByteBuf h = frame.header();
            int at = h.readerIndex();
            switch (frame.amId()) {
                case AmIds.EAGER_ONLY -> {
                    check(frame, EagerHeaders.ONLY_LENGTH);
                    onOnly(h.getLongLE(at + EagerHeaders.TAG_OFFSET), -1, frame.payload().retain());
                }
                case AmIds.EAGER_FIRST -> {
                    check(frame, EagerHeaders.FIRST_LENGTH);
                    onFirst(MessageKind.TAG, h.getLongLE(at + EagerHeaders.TAG_OFFSET),
                            h.getLongLE(at + EagerHeaders.FIRST_TOTAL_OFFSET),
                            h.getLongLE(at + EagerHeaders.FIRST_MSG_ID_OFFSET), -1, -1, frame.payload().retain());
                }
                case AmIds.EAGER_MIDDLE -> {
                    check(frame, EagerHeaders.MIDDLE_LENGTH);
                    onMiddle(h.getLongLE(at + EagerHeaders.MIDDLE_MSG_ID_OFFSET),
                            h.getLongLE(at + EagerHeaders.MIDDLE_OFFSET_OFFSET), frame.payload().retain());
                }
                case AmIds.EAGER_SYNC_ONLY -> {
                    check(frame, EagerHeaders.SYNC_ONLY_LENGTH);
                    onOnly(h.getLongLE(at + EagerHeaders.TAG_OFFSET), requestId(frame, at + EagerHeaders.ONLY_LENGTH),
                            frame.payload().retain());
                }
                case AmIds.EAGER_SYNC_FIRST -> {
                    check(frame, EagerHeaders.SYNC_FIRST_LENGTH);
                    onFirst(MessageKind.TAG, h.getLongLE(at + EagerHeaders.TAG_OFFSET),
                            h.getLongLE(at + EagerHeaders.FIRST_TOTAL_OFFSET),
                            h.getLongLE(at + EagerHeaders.FIRST_MSG_ID_OFFSET),
                            requestId(frame, at + EagerHeaders.FIRST_LENGTH), -1, frame.payload().retain());
                }
                case AmIds.EAGER_ZCOPY_ONLY -> {
                    check(frame, EagerHeaders.ZCOPY_ONLY_LENGTH);
                    long reqId = requestId(frame, at + EagerHeaders.ONLY_LENGTH);
                    onOnly(h.getLongLE(at + EagerHeaders.TAG_OFFSET), -1, frame.payload().retain());
                    acknowledgeArrival(reqId); // arrival, not match: that is what a synchronous send waits for
                }
                case AmIds.EAGER_ZCOPY_FIRST -> {
                    check(frame, EagerHeaders.ZCOPY_FIRST_LENGTH);
                    onFirst(MessageKind.TAG, h.getLongLE(at + EagerHeaders.TAG_OFFSET),
                            h.getLongLE(at + EagerHeaders.FIRST_TOTAL_OFFSET),
                            h.getLongLE(at + EagerHeaders.FIRST_MSG_ID_OFFSET), -1,
                            requestId(frame, at + EagerHeaders.FIRST_LENGTH), frame.payload().retain());
                }
                case AmIds.STREAM_ONLY -> {
                    check(frame, EagerHeaders.ONLY_LENGTH);
                    ctx.fireChannelRead(StreamSlot.whole(frame.payload().retain()));
                }
                case AmIds.STREAM_ZCOPY_ONLY -> {
                    check(frame, EagerHeaders.ZCOPY_ONLY_LENGTH);
                    long reqId = requestId(frame, at + EagerHeaders.ONLY_LENGTH);
                    ctx.fireChannelRead(StreamSlot.whole(frame.payload().retain()));
                    acknowledgeArrival(reqId);
                }
                case AmIds.STREAM_FIRST -> {
                    check(frame, EagerHeaders.FIRST_LENGTH);
                    onFirst(MessageKind.STREAM, 0, h.getLongLE(at + EagerHeaders.FIRST_TOTAL_OFFSET),
                            h.getLongLE(at + EagerHeaders.FIRST_MSG_ID_OFFSET), -1, -1, frame.payload().retain());
                }
                case AmIds.STREAM_ZCOPY_FIRST -> {
                    check(frame, EagerHeaders.ZCOPY_FIRST_LENGTH);
                    onFirst(MessageKind.STREAM, 0, h.getLongLE(at + EagerHeaders.FIRST_TOTAL_OFFSET),
                            h.getLongLE(at + EagerHeaders.FIRST_MSG_ID_OFFSET), -1,
                            requestId(frame, at + EagerHeaders.FIRST_LENGTH), frame.payload().retain());
                }
                case AmIds.AM_ONLY -> {
                    check(frame, EagerHeaders.ONLY_LENGTH);
                    ctx.fireChannelRead(AmIncoming.eager(h.getLongLE(at + EagerHeaders.TAG_OFFSET),
                            frame.payload().retain()));
                }
                case AmIds.AM_ZCOPY_ONLY -> {
                    check(frame, EagerHeaders.ZCOPY_ONLY_LENGTH);
                    long reqId = requestId(frame, at + EagerHeaders.ONLY_LENGTH);
                    acknowledgeArrival(reqId); // first: the handler may close the endpoint
                    ctx.fireChannelRead(AmIncoming.eager(h.getLongLE(at + EagerHeaders.TAG_OFFSET),
                            frame.payload().retain()));
                }
                case AmIds.AM_FIRST -> {
                    check(frame, EagerHeaders.FIRST_LENGTH);
                    onFirst(MessageKind.AM, h.getLongLE(at + EagerHeaders.TAG_OFFSET),
                            h.getLongLE(at + EagerHeaders.FIRST_TOTAL_OFFSET),
                            h.getLongLE(at + EagerHeaders.FIRST_MSG_ID_OFFSET), -1, -1, frame.payload().retain());
                }
                case AmIds.AM_ZCOPY_FIRST -> {
                    check(frame, EagerHeaders.ZCOPY_FIRST_LENGTH);
                    onFirst(MessageKind.AM, h.getLongLE(at + EagerHeaders.TAG_OFFSET),
                            h.getLongLE(at + EagerHeaders.FIRST_TOTAL_OFFSET),
                            h.getLongLE(at + EagerHeaders.FIRST_MSG_ID_OFFSET), -1,
                            requestId(frame, at + EagerHeaders.FIRST_LENGTH), frame.payload().retain());
                }
                case AmIds.EAGER_SYNC_ACK -> {
                    check(frame, EagerHeaders.SYNC_ACK_LENGTH);
                    sender.onSyncAck(h.getLongLE(at), h.getByte(at + 8));
                }
                case AmIds.EAGER_ZCOPY_ACK -> {
                    check(frame, EagerHeaders.ZCOPY_ACK_LENGTH);
                    sender.onZcopyAck(h.getLongLE(at));
                }
                default -> throw new ProtocolException("not an eager frame: " + AmIds.name(frame.amId()));
            }
        } finally {
            frame.release();
        }
    }

    /** A whole message arrived; {@code syncReqId >= 0}: the sender waits for the match. Owns {@code payload}. */
    private void onOnly(long tag, long syncReqId, ByteBuf payload) {
        TagReceive r = matcher.takeExpected(tag);
        if (r != null) {
            if (syncReqId >= 0) {
                acknowledgeMatch(syncReqId, r, payload.readableBytes());
            }
            r.deliver(tag, payload);
        } else if (toPipeline.test(tag)) {
            if (syncReqId >= 0) {
                acknowledgeMatch(syncReqId, null, 0);
            }
            ctx.fireChannelRead(new TagMessage(tag, payload));
        } else {
            Arrival a = new Arrival(tag, payload.readableBytes(), syncReqId);
            a.data = payload;
            matcher.addUnexpected(a);
        }
    }

    /**
     * The first fragment of a message; its destination is decided now, in the order the peer wrote: for a stream
     * write its place in the endpoint's stream, for an active message the pipeline once whole, else by tag.
     */
    private void onFirst(MessageKind kind, long tag, long total, long msgId, long syncReqId, long zcopyReqId,
                         ByteBuf payload) {
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
            Reassembly ra = new Reassembly(msgId, tag, (int) total, zcopyReqId);
            TagReceive r = kind == MessageKind.TAG ? matcher.takeExpected(tag) : null;
            if (kind == MessageKind.AM) {
                if (AmHeaders.headerLength(tag) > total) {
                    throw new ProtocolException("active message " + Long.toHexString(msgId) + " of " + total
                            + " bytes announces a " + AmHeaders.headerLength(tag) + "-byte header");
                }
                ra.target = AM_TARGET;
            } else if (kind == MessageKind.STREAM) {
                StreamSlot slot = new StreamSlot();
                ra.target = slot;
                ctx.fireChannelRead(slot);
            } else if (r != null) {
                if (syncReqId >= 0) {
                    acknowledgeMatch(syncReqId, r, total);
                }
                if (!r.fits(total)) {
                    r.truncated(tag, total); // the rest is dropped
                } else if (r.claim()) { // its buffer takes the fragments still to come: no taking it back
                    ra.target = r;
                    ra.buffer = r.target((int) total);
                    ra.inPlace = ra.buffer != null;
                }
            } else if (toPipeline.test(tag)) {
                if (syncReqId >= 0) {
                    acknowledgeMatch(syncReqId, null, 0);
                }
                PipelineSlot slot = new PipelineSlot();
                ra.target = slot;
                ctx.fireChannelRead(slot);
            } else {
                Arrival a = new Arrival(tag, total, syncReqId);
                a.reassembly = ra;
                ra.target = a;
                matcher.addUnexpected(a);
            }
            if (ra.target != null && ra.buffer == null) {
                ra.buffer = alloc.buffer((int) total);
            }
            reassemblies.put(msgId, ra);
            append(ra, 0, payload);
        } finally {
            payload.release();
        }
    }

    private void onMiddle(long msgId, long offset, ByteBuf payload) {
        try {
            Reassembly ra = reassemblies.get(msgId);
            if (ra == null) {
                throw new ProtocolException("fragment of unknown message id " + Long.toHexString(msgId));
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
            reassemblies.remove(ra.msgId);
            complete(ra);
            if (ra.zcopyReqId >= 0) {
                acknowledgeArrival(ra.zcopyReqId); // arrived, wherever it went (even dropped)
            }
        }
    }

    private void complete(Reassembly ra) {
        ByteBuf data = ra.buffer;
        ra.buffer = null;
        if (data != null) {
            data.writerIndex(ra.total);
        }
        if (ra.target == AM_TARGET) {
            ctx.fireChannelRead(AmIncoming.eager(ra.tag, data));
            return;
        }
        switch (ra.target) {
            case TagReceive r when ra.inPlace -> r.completeInPlace(ra.tag, data);
            case TagReceive r -> r.deliver(ra.tag, data);
            case Arrival a -> {
                a.data = data;
                a.reassembly = null;
            }
            case PipelineSlot s -> s.complete(new TagMessage(ra.tag, data));
            case StreamSlot s -> s.complete(data);
            case null, default -> {
                if (data != null) {
                    data.release();
                }
            }
        }
    }

    /** Tells a synchronous sender its message was matched by {@code r} (null: the pipeline took it). */
    private void acknowledgeMatch(long syncReqId, TagReceive r, long length) {
        reply(AmFrame.of(AmIds.EAGER_SYNC_ACK, ctx.alloc().buffer(EagerHeaders.SYNC_ACK_LENGTH).writeLongLE(syncReqId)
                .writeByte(r != null && !r.fits(length) ? RndvHeaders.STATUS_TRUNCATED : RndvHeaders.STATUS_OK)));
    }

    private void acknowledgeArrival(long zcopyReqId) {
        reply(AmFrame.of(AmIds.EAGER_ZCOPY_ACK, ctx.alloc().buffer(EagerHeaders.ZCOPY_ACK_LENGTH)
                .writeLongLE(zcopyReqId)));
    }

    /** Answers the sender below this codec; dropped once the endpoint is gone (nobody waits for it then). */
    private void reply(AmFrame frame) {
        if (!ctx.channel().isOpen() || ctx.isRemoved()) {
            frame.release();
            return;
        }
        ctx.writeAndFlush(frame, ProtocolCodec.quietPromise(ctx));
    }

    /**
     * The endpoint ended: messages still arriving from it can never complete. A receive waiting for one fails; one
     * queued as unexpected leaves the queue; a place in the pipeline's order is given up.
     */
    void abort(Throwable cause) {
        List<Reassembly> dead = new ArrayList<>(reassemblies.values());
        reassemblies.clear();
        for (Reassembly ra : dead) {
            if (ra.buffer != null) {
                ra.buffer.release();
                ra.buffer = null;
            }
            switch (ra.target) {
                case TagReceive r -> r.fail(new IOException("sender " + ctx.channel() + " went away after "
                        + ra.received + " of " + ra.total + " bytes of message " + Long.toHexString(ra.msgId),
                        cause));
                case Arrival a -> matcher.withdraw(a);
                case PipelineSlot s -> s.abort();
                case StreamSlot s -> s.abort();
                case null, default -> {
                }
            }
        }
    }

    /** Messages whose fragments are still arriving. */
    int reassemblyCount() {
        return reassemblies.size();
    }

    private static long requestId(AmFrame frame, int index) {
        long reqId = frame.header().getLongLE(index);
        if (reqId < 0) {
            throw new ProtocolException(AmIds.name(frame.amId()) + " with request id " + reqId);
        }
        return reqId;
    }

    private static void check(AmFrame frame, int headerLength) {
        if (frame.header().readableBytes() != headerLength) {
            throw new ProtocolException(AmIds.name(frame.amId()) + " header is " + frame.header().readableBytes()
                    + " bytes, expected " + headerLength);
        }
    }
}
