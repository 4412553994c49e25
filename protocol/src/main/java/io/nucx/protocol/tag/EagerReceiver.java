package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.ChannelHandlerContext;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.EndpointServices;
import io.nucx.protocol.LimitExceededException;
import io.nucx.protocol.MemoryBudget;
import io.nucx.protocol.ProtocolCodec;
import io.nucx.protocol.ProtocolException;
import io.nucx.protocol.am.AmHeaders;
import io.nucx.protocol.am.AmIncoming;
import io.nucx.protocol.stream.StreamSlot;
import io.nucx.transport.AmFrame;
import io.nucx.transport.Buffers;
import io.nucx.transport.ShortPayload;
import io.netty.util.collection.LongObjectHashMap;

import java.io.IOException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.LinkedHashSet;
import java.util.Set;

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

    /**
     * A multi-fragment message being put together. Reused once complete ({@link #recycle}): a message in fragments
     * allocates nothing of this receiver's.
     */
    private static final class Reassembly {
        long msgId;
        long tag;
        int total;
        /** A {@link TagReceive}, an {@link Arrival}, a {@link PipelineSlot}, a {@link StreamSlot}, or null. */
        Object target;
        /** Its bytes so far: in the receive's own buffer, or copies (committed as they arrive); null before bound. */
        Fragments parts;
        /** The fragments object this reassembly keeps for its next message (parts is it, or null, or a new one). */
        Fragments spareParts;
        /** Bytes charged to the endpoint's budget while no posted receive owns the message. */
        long charged;
        /**
         * Its bytes go into one buffer of the whole message, this receiver's ({@link #unowned}), not a receive's: in
         * place, but not in the user's buffer.
         */
        boolean wholeOwn;
        /** A zero-copy message's sender request id, acknowledged once every byte has arrived; -1 otherwise. */
        long zcopyReqId;
        /**
         * Matched when its first fragment's header came ({@link #placeFirst}), its payload being written into the
         * receive's buffer by the transport: the fragment itself is still to arrive.
         */
        boolean firstPlaced;

        Reassembly init(long msgId, long tag, int total, long zcopyReqId) {
            this.msgId = msgId;
            this.tag = tag;
            this.total = total;
            this.zcopyReqId = zcopyReqId;
            this.target = null;
            this.parts = null;
            this.charged = 0;
            this.wholeOwn = false;
            this.firstPlaced = false;
            return this;
        }

        /** Its fragments, reusing the object of a message before. */
        Fragments fragments(ByteBufAllocator alloc, ByteBuf own, int total) {
            if (spareParts == null) {
                spareParts = Fragments.counted(0);
            }
            return spareParts.reset(own != null ? null : alloc, own, total);
        }

        /** Named in a fragment's error. */
        @Override
        public String toString() {
            return "message " + Long.toHexString(msgId);
        }
    }

    /** An eager message nobody has received yet: whole ({@code data}), or still arriving ({@code reassembly}). */
    private final class Arrival extends TagArrival {
        ByteBuf data;
        Reassembly reassembly;
        /** A synchronous message: the sender waits for the acknowledgement of the match; -1 otherwise. */
        final long syncReqId;
        final long size;
        /** Bytes charged to the endpoint's budget for it (its entry, and its data as they arrived). */
        long charged;

        Arrival(long tag, long size, long syncReqId) {
            super(tag);
            this.size = size;
            this.syncReqId = syncReqId;
        }

        @Override
        protected void matched(TagReceive r) {
            queued.remove(this);
            budget.release(charged);
            charged = 0;
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
                budget.release(reassembly.charged); // a posted receive owns what came and what comes
                reassembly.charged = 0;
                reassembly = null; // the receive has it now (and it is reused once complete)
            }
        }

        @Override
        protected void discard() {
            queued.remove(this);
            drop(this);
        }
    }

    /** The target of an active message being put together: it goes up the pipeline once whole. */
    private static final Object AM_TARGET = new Object();
    /**
     * The largest message no posted receive owns whose buffer is taken whole at its first fragment ({@link
     * #unowned}): what an announcement may commit before its bytes come, charged to the peer's budget. Eager's
     * fragments reach 1 MiB by default (the rendezvous takes over above it); bigger ones are copied as they arrive.
     */
    static final int WHOLE_AT_ONCE_MAX = 1 << 20;
    /**
     * The most this endpoint holds in such buffers for messages not yet whole: a peer that announces and then sends
     * nothing commits that much at most, however large its budget; more messages at once are copied as they arrive.
     */
    static final int WHOLE_AHEAD_MAX = 4 << 20;
    /** Completed reassemblies kept for reuse: more than the messages one endpoint has arriving at once is waste. */
    private static final int MAX_SPARE_REASSEMBLIES = 8;

    private final ChannelHandlerContext ctx;
    private final EndpointServices endpoint;
    private final TagMatcher matcher;
    private final ByteBufAllocator alloc;
    private final long maxMessageSize;
    private final EagerSender sender;
    private final MemoryBudget budget;
    private final LongObjectHashMap<Reassembly> reassemblies = new LongObjectHashMap<>();
    /** Reassemblies of messages completed, for the next ones (loop only; a few: messages in flight at once). */
    private final ArrayDeque<Reassembly> spareReassemblies = new ArrayDeque<>();
    /**
     * An EAGER_ONLY matched when its header came ({@link #placeOnly}), its payload still to arrive: the posted receive
     * that took it, and the slice of the receive's buffer the transport writes the payload into (null: delivered the
     * ordinary way, e.g. a receive without a buffer or one the message does not fit). The lane reads in order, so the
     * next EAGER_ONLY to arrive is that one.
     */
    private TagReceive placedOnly;
    private ByteBuf placedOnlyTarget;
    private long placedOnlyTag;
    /** Bytes of the buffers taken whole ahead of their messages' bytes ({@link #unowned}) not yet complete. */
    private long wholeAhead;
    /** The last short active message's object, released when its arrival ended: the next one's ({@link #onAmOnly}). */
    private AmIncoming.InPlace spareAm;
    /** This endpoint's arrivals in the worker's unexpected queue. */
    private final Set<Arrival> queued = new LinkedHashSet<>();

    /**
     * @param endpoint its receive budget takes what no posted receive owns; it says whether a message of a tag no
     *                 posted receive wants goes up its pipeline; the acknowledgements go to its lanes
     * @param sender   takes the acknowledgements of this endpoint's own synchronous and zero-copy sends
     */
    EagerReceiver(ChannelHandlerContext ctx, EndpointServices endpoint, TagMatcher matcher, ByteBufAllocator alloc,
                  long maxMessageSize, EagerSender sender) {
        this.ctx = ctx;
        this.endpoint = endpoint;
        this.budget = endpoint.receiveBudget();
        this.matcher = matcher;
        this.alloc = alloc;
        this.maxMessageSize = maxMessageSize;
        this.sender = sender;
    }

    /**
     * Where an EAGER_MIDDLE's payload goes, before it arrives ({@link io.nucx.protocol.ProtocolCodec#placePayload}):
     * into a posted receive's own buffer, or the one buffer taken for a message no receive owns ({@link #unowned}),
     * when its message is being written there; else null.
     */
    ByteBuf placePayload(int amId, ByteBuf header, int length) {
        if (amId == AmIds.EAGER_ONLY && header.readableBytes() == EagerHeaders.ONLY_LENGTH) {
            return placeOnly(header.getLongLE(header.readerIndex() + EagerHeaders.TAG_OFFSET), length);
        }
        if (amId == AmIds.EAGER_FIRST && header.readableBytes() == EagerHeaders.FIRST_LENGTH) {
            return placeFirst(header, -1, length);
        }
        if (amId == AmIds.EAGER_ZCOPY_FIRST && header.readableBytes() == EagerHeaders.ZCOPY_FIRST_LENGTH) {
            return placeFirst(header, header.getLongLE(header.readerIndex() + EagerHeaders.FIRST_LENGTH), length);
        }
        if (amId == AmIds.AM_FIRST && header.readableBytes() == EagerHeaders.FIRST_LENGTH) {
            return placeUnownedFirst(MessageKind.AM, header, -1, length);
        }
        if (amId == AmIds.AM_ZCOPY_FIRST && header.readableBytes() == EagerHeaders.ZCOPY_FIRST_LENGTH) {
            return placeUnownedFirst(MessageKind.AM, header,
                    header.getLongLE(header.readerIndex() + EagerHeaders.FIRST_LENGTH), length);
        }
        if (amId == AmIds.STREAM_FIRST && header.readableBytes() == EagerHeaders.FIRST_LENGTH) {
            return placeUnownedFirst(MessageKind.STREAM, header, -1, length);
        }
        if (amId == AmIds.STREAM_ZCOPY_FIRST && header.readableBytes() == EagerHeaders.ZCOPY_FIRST_LENGTH) {
            return placeUnownedFirst(MessageKind.STREAM, header,
                    header.getLongLE(header.readerIndex() + EagerHeaders.FIRST_LENGTH), length);
        }
        if (((amId == AmIds.STREAM_ONLY || amId == AmIds.AM_ONLY)
                && header.readableBytes() == EagerHeaders.ONLY_LENGTH)
                || ((amId == AmIds.STREAM_ZCOPY_ONLY || amId == AmIds.AM_ZCOPY_ONLY)
                && header.readableBytes() == EagerHeaders.ZCOPY_ONLY_LENGTH)) {
            return placeUnownedOnly(length);
        }
        if (amId != AmIds.EAGER_MIDDLE || header.readableBytes() != EagerHeaders.MIDDLE_LENGTH) {
            return null;
        }
        int at = header.readerIndex();
        Reassembly ra = reassemblies.get(header.getLongLE(at + EagerHeaders.MIDDLE_MSG_ID_OFFSET));
        if (ra == null || ra.parts == null || !(ra.target instanceof TagReceive || ra.wholeOwn)) {
            return null;
        }
        return ra.parts.placeFor(header.getLongLE(at + EagerHeaders.MIDDLE_OFFSET_OFFSET), length);
    }

    /**
     * Where an EAGER_ONLY's payload goes, before it arrives: into the buffer of the posted receive its tag matches now,
     * as {@link #placeFirst} does for a first fragment. Over tcp a single-frame message then goes from the socket
     * straight into the user's buffer, not through the lane's cumulation and a copy out of it. Only a posted receive
     * is taken here; anything else is left for the frame's arrival.
     */
    private ByteBuf placeOnly(long tag, int length) {
        if (placedOnly != null) {
            return null; // asked again for the same frame (a decoder that had no answer before): decided already
        }
        TagReceive r = matcher.takeExpected(tag);
        if (r == null) {
            return null;
        }
        placedOnly = r;
        placedOnlyTag = tag;
        if (!r.fits(length) || !r.claim()) {
            return null; // its arrival reports the truncation (or finds the receive cancelled), as unplaced
        }
        ByteBuf target = r.target(length);
        if (target == null) {
            return null;
        }
        placedOnlyTarget = target;
        return target.retainedSlice(0, length).clear();
    }

    /**
     * Where an EAGER_FIRST's (or EAGER_ZCOPY_FIRST's) payload goes, before it arrives: the message is matched now,
     * and when a posted receive with a buffer of the user's takes it, the first fragment is written there by the
     * transport, as the middle ones are (before, it was copied into a buffer of the lane's, then into the user's: a
     * 64 KiB copy more per message). Only a posted receive is taken here; an unexpected message or one for the
     * pipeline is started when its fragment arrives (nothing of the user's runs before the frame). A header that
     * would fail ({@link #onFirst}) is left for the frame's arrival to report. The frame follows on the same lane
     * with nothing of this endpoint's in between (the lane reads in order), and {@link #onFirst} finds it started.
     */
    private ByteBuf placeFirst(ByteBuf h, long zcopyReqId, int length) {
        int at = h.readerIndex();
        long tag = h.getLongLE(at + EagerHeaders.TAG_OFFSET);
        long total = h.getLongLE(at + EagerHeaders.FIRST_TOTAL_OFFSET);
        long msgId = h.getLongLE(at + EagerHeaders.FIRST_MSG_ID_OFFSET);
        if (total > maxMessageSize || total < length || reassemblies.containsKey(msgId)) {
            return null;
        }
        TagReceive r = matcher.takeExpected(tag);
        if (r == null) {
            return null;
        }
        Reassembly ra = reassembly(msgId, tag, (int) total, zcopyReqId);
        bind(ra, r, tag, total, -1);
        ra.firstPlaced = true;
        reassemblies.put(msgId, ra);
        return ra.parts.placeFor(0, length);
    }

    /**
     * Where an AM_FIRST's or STREAM_FIRST's (or their ZCOPY_FIRST's) payload goes, before it arrives: the message is
     * started now, in the one buffer of the whole message {@link #unowned} takes, and the transport writes the
     * fragment there as it does the middle ones (a 64 KiB copy less per message: a Netty app's writes over shm came
     * into a buffer of the lane's, then were copied into this one). Nothing of the user's runs before the frame: a
     * stream write's slot goes up the pipeline when the frame arrives ({@link #onFirst}), as unplaced. A header that
     * would fail ({@link #onFirst}), a message too big for one buffer, or a budget that does not take it all now:
     * left for the frame's arrival, as before.
     */
    private ByteBuf placeUnownedFirst(MessageKind kind, ByteBuf h, long zcopyReqId, int length) {
        int at = h.readerIndex();
        long tag = kind == MessageKind.AM ? h.getLongLE(at + EagerHeaders.TAG_OFFSET) : 0;
        long total = h.getLongLE(at + EagerHeaders.FIRST_TOTAL_OFFSET);
        long msgId = h.getLongLE(at + EagerHeaders.FIRST_MSG_ID_OFFSET);
        if (total > WHOLE_AT_ONCE_MAX || total > maxMessageSize || total < length
                || (kind == MessageKind.AM && AmHeaders.headerLength(tag) > total) || reassemblies.containsKey(msgId)
                || !budget.tryCharge(MemoryBudget.ENTRY_COST)) {
            return null;
        }
        Reassembly ra = reassembly(msgId, tag, (int) total, zcopyReqId);
        ra.target = kind == MessageKind.AM ? AM_TARGET : new StreamSlot();
        charged(ra, MemoryBudget.ENTRY_COST);
        ra.parts = unowned(ra);
        if (!ra.wholeOwn) {
            budget.release(ra.charged);
            recycle(ra);
            return null;
        }
        ra.firstPlaced = true;
        reassemblies.put(msgId, ra);
        return ra.parts.placeFor(0, length);
    }

    /**
     * Where a whole stream write's or active message's payload (STREAM_ONLY, AM_ONLY and their ZCOPY_ONLY) goes, before
     * it arrives: a buffer of exactly its length, which the frame then carries up as its payload, as it would carry a
     * slice of the lane's own. Over tcp the rest of the payload is then read straight into it, where each read was
     * appended to the lane's cumulation (a 64 KiB write of a Netty app over tcp lanes: 25 % of its receiver's samples
     * in that copy). The lane holds as much either way: the frame's length is bounded by the lane's decoder, and an
     * unplaced frame is held in the cumulation until it is whole; so nothing is charged here.
     */
    private ByteBuf placeUnownedOnly(int length) {
        return alloc.directBuffer(length, length);
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

    /**
     * An EAGER_ONLY frame as its parts: the tag and the payload where the transport read it, copied straight into a
     * posted receive's buffer when it has one, else out into a buffer of its own first.
     */
    void onOnly(long tag, ShortPayload payload) {
        TagReceive r = matcher.takeExpected(tag);
        if (r != null && r.deliverFrom(tag, payload)) {
            return;
        }
        arrived(tag, -1, r, payload.copyOut());
    }

    /**
     * An AM_ONLY short frame, its payload still in the transport: up the pipeline as a message read in place, whose
     * handler copies what it wants straight from there (nothing, for a handler that only counts).
     */
    void onAmOnly(long tagField, ShortPayload payload) {
        AmIncoming.InPlace m = AmIncoming.inPlace(tagField, payload, spareAm);
        spareAm = null;
        try {
            ctx.fireChannelRead(m);
        } finally {
            m.arrivalEnded();
            if (m.isReleased()) {
                spareAm = m; // nobody holds it (a holder of the old one tells by its generation): the next one's
            }
        }
    }

    /** A whole message arrived; {@code syncReqId >= 0}: the sender waits for the match. Owns {@code payload}. */
    private void onOnly(long tag, long syncReqId, ByteBuf payload) {
        TagReceive r = placedOnly;
        if (r == null) {
            arrived(tag, syncReqId, matcher.takeExpected(tag), payload);
            return;
        }
        // The frame placeOnly matched (the same header: the lane hands up the frame it asked about).
        placedOnly = null;
        ByteBuf target = placedOnlyTarget;
        placedOnlyTarget = null;
        if (tag != placedOnlyTag || syncReqId >= 0) {
            payload.release();
            if (target != null) {
                target.release();
            }
            ProtocolException e = new ProtocolException("EAGER_ONLY of tag " + Long.toHexString(tag)
                    + " arrived where one of tag " + Long.toHexString(placedOnlyTag) + " was placed");
            r.fail(e);
            throw e;
        }
        if (target == null) {
            arrived(tag, -1, r, payload);
            return;
        }
        try {
            int n = payload.readableBytes();
            if (n != target.writableBytes()) {
                target.release();
                ProtocolException e = new ProtocolException("EAGER_ONLY of " + n + " bytes arrived where "
                        + target.writableBytes() + " were placed");
                r.fail(e);
                throw e;
            }
            if (!Fragments.placedAt(payload, target, 0)) {
                Buffers.copy(payload, payload.readerIndex(), target, 0, n); // not written there by the transport
            }
            target.writerIndex(n);
        } finally {
            payload.release();
        }
        r.completeInPlace(tag, target);
    }

    /** A whole message for {@code r}, the posted receive it matched, or null. Owns {@code payload}. */
    private void arrived(long tag, long syncReqId, TagReceive r, ByteBuf payload) {
        if (r != null) {
            if (syncReqId >= 0) {
                acknowledgeMatch(syncReqId, r, payload.readableBytes());
            }
            r.deliver(tag, payload);
        } else if (endpoint.deliversToPipeline(tag)) {
            if (syncReqId >= 0) {
                acknowledgeMatch(syncReqId, null, 0);
            }
            ctx.fireChannelRead(new TagMessage(tag, payload));
        } else {
            try {
                long cost = MemoryBudget.ENTRY_COST + payload.readableBytes();
                if (!budget.tryCharge(cost)) { // the text only for the error: no string per message
                    budget.charge(cost, "unexpected message of tag " + Long.toHexString(tag) + " ("
                            + payload.readableBytes() + " bytes)");
                }
            } catch (LimitExceededException e) {
                payload.release();
                throw e;
            }
            Arrival a = new Arrival(tag, payload.readableBytes(), syncReqId);
            a.charged = MemoryBudget.ENTRY_COST + payload.readableBytes();
            a.data = payload;
            queue(a);
        }
    }

    private void queue(Arrival a) {
        queued.add(a);
        matcher.addUnexpected(a);
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
            Reassembly started = reassemblies.get(msgId);
            if (started != null && started.firstPlaced && (kind == MessageKind.AM) == (started.target == AM_TARGET)
                    && (kind == MessageKind.STREAM) == (started.target instanceof StreamSlot)
                    && started.tag == tag && started.total == total && started.zcopyReqId == zcopyReqId
                    && syncReqId < 0) {
                // started by placeFirst or placeUnownedFirst; its bytes are in the receive's buffer or the one taken
                started.firstPlaced = false;
                if (started.target instanceof StreamSlot slot) {
                    ctx.fireChannelRead(slot); // its place in the stream, as an unplaced first fragment's below
                }
                append(started, 0, payload);
                return;
            }
            if (started != null) {
                throw new ProtocolException("message id " + Long.toHexString(msgId) + " started twice");
            }
            Reassembly ra = reassembly(msgId, tag, (int) total, zcopyReqId);
            TagReceive r = kind == MessageKind.TAG ? matcher.takeExpected(tag) : null;
            if (kind == MessageKind.AM) {
                if (AmHeaders.headerLength(tag) > total) {
                    throw new ProtocolException("active message " + Long.toHexString(msgId) + " of " + total
                            + " bytes announces a " + AmHeaders.headerLength(tag) + "-byte header");
                }
                // Charged like a stream write's until whole: then the handler has it.
                charge(ra, MemoryBudget.ENTRY_COST, "active message ", "");
                ra.target = AM_TARGET;
                ra.parts = unowned(ra);
            } else if (kind == MessageKind.STREAM) {
                charge(ra, MemoryBudget.ENTRY_COST, "stream write ", "");
                StreamSlot slot = new StreamSlot();
                ra.target = slot;
                ra.parts = unowned(ra);
                ctx.fireChannelRead(slot);
            } else if (r != null) {
                bind(ra, r, tag, total, syncReqId);
            } else if (endpoint.deliversToPipeline(tag)) {
                charge(ra, MemoryBudget.ENTRY_COST, "message ", " arriving for the pipeline");
                if (syncReqId >= 0) {
                    acknowledgeMatch(syncReqId, null, 0);
                }
                PipelineSlot slot = new PipelineSlot();
                ra.target = slot;
                ra.parts = unowned(ra);
                ctx.fireChannelRead(slot);
            } else {
                if (!budget.tryCharge(MemoryBudget.ENTRY_COST)) {
                    budget.charge(MemoryBudget.ENTRY_COST, "unexpected message " + Long.toHexString(msgId));
                }
                Arrival a = new Arrival(tag, total, syncReqId);
                a.charged = MemoryBudget.ENTRY_COST;
                a.reassembly = ra;
                ra.target = a;
                ra.parts = unowned(ra);
                queue(a);
            }
            if (ra.parts == null) {
                ra.parts = Fragments.counted((int) total); // nobody will receive it: the rest is dropped
            }
            reassemblies.put(msgId, ra);
            append(ra, 0, payload);
        } finally {
            payload.release();
        }
    }

    /**
     * Where the bytes of a message no posted receive owns go ({@code ra}'s target set): one buffer of the whole
     * message when it is at most {@link #WHOLE_AT_ONCE_MAX} and the endpoint's budget takes all of it now (charged at
     * once), so each fragment is copied once, there, or written there by the transport ({@link #placePayload}), and
     * the message needs no putting together; else copies committed and charged as they arrive and put together once
     * whole (a bigger announcement commits nothing before its bytes come).
     */
    private Fragments unowned(Reassembly ra) {
        if (ra.total > WHOLE_AT_ONCE_MAX || wholeAhead + ra.total > WHOLE_AHEAD_MAX || !budget.tryCharge(ra.total)) {
            return ra.fragments(alloc, null, ra.total);
        }
        ByteBuf whole;
        try {
            whole = alloc.buffer(ra.total, ra.total);
        } catch (RuntimeException | OutOfMemoryError e) {
            budget.release(ra.total); // no room for all of it now: its bytes are committed as they arrive
            return ra.fragments(alloc, null, ra.total);
        }
        charged(ra, ra.total);
        ra.wholeOwn = true;
        wholeAhead += ra.total;
        return ra.fragments(null, whole, ra.total);
    }

    /** {@code ra} no longer holds a buffer of the whole taken ahead of its bytes (it completed, or was let go). */
    private void endWhole(Reassembly ra) {
        if (ra.wholeOwn) {
            ra.wholeOwn = false;
            wholeAhead -= ra.total;
        }
    }

    /**
     * Charges {@code bytes} of {@code ra} to the endpoint's budget (no posted receive owns it). A refusal names it as
     * {@code what}, its id, then {@code after}: the text is built only then, not for every message.
     */
    private void charge(Reassembly ra, long bytes, String what, String after) {
        if (!budget.tryCharge(bytes)) {
            budget.charge(bytes, what + Long.toHexString(ra.msgId) + after);
        }
        charged(ra, bytes);
    }

    /** Counts {@code bytes} charged for {@code ra} where they are given back. */
    private static void charged(Reassembly ra, long bytes) {
        if (ra.target instanceof Arrival a) {
            a.charged += bytes;
        } else {
            ra.charged += bytes;
        }
    }

    private void onMiddle(long msgId, long offset, ByteBuf payload) {
        try {
            Reassembly ra = reassemblies.get(msgId);
            if (ra == null) {
                throw new ProtocolException("fragment of unknown message id " + Long.toHexString(msgId));
            }
            append(ra, offset, payload);
        } finally {
            payload.release();
        }
    }

    /** A multi-fragment message goes to posted receive {@code r}: into its buffer, or dropped if it does not fit. */
    private void bind(Reassembly ra, TagReceive r, long tag, long total, long syncReqId) {
        if (syncReqId >= 0) {
            acknowledgeMatch(syncReqId, r, total);
        }
        if (!r.fits(total)) {
            r.truncated(tag, total); // the rest is dropped
        } else if (r.claim()) { // its buffer takes the fragments still to come: no taking it back
            ra.target = r;
            ra.parts = ra.fragments(alloc, r.target((int) total), (int) total);
        }
        if (ra.parts == null) {
            ra.parts = Fragments.counted((int) total); // nobody will receive it: the rest is dropped
        }
    }

    private void append(Reassembly ra, long offset, ByteBuf payload) {
        int n = payload.readableBytes();
        if (!ra.wholeOwn && ra.target != null && !(ra.target instanceof TagReceive) && n > 0) {
            if (!budget.tryCharge(n)) { // the text only for the error: not a string per fragment
                budget.charge(n, "message " + Long.toHexString(ra.msgId) + " (" + ra.total + " bytes, "
                        + ra.parts.received() + " arrived)");
            }
            charged(ra, n);
        }
        ra.parts.add(offset, payload, ra);
        if (ra.parts.isComplete()) {
            reassemblies.remove(ra.msgId);
            complete(ra);
            if (ra.zcopyReqId >= 0) {
                acknowledgeArrival(ra.zcopyReqId); // arrived, wherever it went (even dropped)
            }
            recycle(ra);
        }
    }

    /** A reassembly for a message starting now: one of a completed message, or a new one. */
    private Reassembly reassembly(long msgId, long tag, int total, long zcopyReqId) {
        Reassembly ra = spareReassemblies.pollFirst();
        return (ra != null ? ra : new Reassembly()).init(msgId, tag, total, zcopyReqId);
    }

    /**
     * Keeps a completed reassembly for the next message. Nothing refers to it any more: it left the map, its data went
     * to its target ({@link #complete}), and an arrival it belonged to let go of it there.
     */
    private void recycle(Reassembly ra) {
        ra.target = null;
        ra.parts = null;
        if (ra.spareParts != null) {
            ra.spareParts.reset(null, null, 0); // no hold on the last receive's buffer while it waits
        }
        if (spareReassemblies.size() < MAX_SPARE_REASSEMBLIES) {
            spareReassemblies.addFirst(ra);
        }
    }

    private void complete(Reassembly ra) {
        boolean inPlace = ra.parts.isInPlace() && !ra.wholeOwn; // in the receive's own buffer
        endWhole(ra);
        ByteBuf data = ra.parts.take();
        ra.parts = null;
        if (ra.target == AM_TARGET) {
            budget.release(ra.charged);
            ra.charged = 0;
            ctx.fireChannelRead(AmIncoming.eager(ra.tag, data));
            return;
        }
        switch (ra.target) {
            case TagReceive r when inPlace -> r.completeInPlace(ra.tag, data);
            case TagReceive r -> r.deliver(ra.tag, data);
            case Arrival a -> {
                a.data = data;
                a.reassembly = null;
            }
            case PipelineSlot s -> {
                budget.release(ra.charged);
                ra.charged = 0;
                s.complete(new TagMessage(ra.tag, data));
            }
            case StreamSlot s -> {
                budget.release(ra.charged);
                ra.charged = 0;
                s.complete(data);
            }
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
        endpoint.writeAndFlushFrame(ctx, frame, ProtocolCodec.quietPromise(ctx));
    }

    /**
     * The endpoint ended: messages still arriving from it can never complete. A receive waiting for one fails; one
     * queued as unexpected leaves the queue; a place in the pipeline's order is given up.
     */
    void abort(Throwable cause) {
        TagReceive only = placedOnly;
        if (only != null) {
            placedOnly = null;
            if (placedOnlyTarget != null) {
                placedOnlyTarget.release();
                placedOnlyTarget = null;
            }
            only.fail(new IOException("sender " + ctx.channel() + " went away before the message of tag "
                    + Long.toHexString(placedOnlyTag) + " had arrived", cause));
        }
        List<Reassembly> dead = new ArrayList<>(reassemblies.values());
        reassemblies.clear();
        for (Reassembly ra : dead) {
            int received = ra.parts.received();
            endWhole(ra);
            ra.parts.release();
            ra.parts = null;
            budget.release(ra.charged);
            ra.charged = 0;
            switch (ra.target) {
                case TagReceive r -> r.fail(new IOException("sender " + ctx.channel() + " went away after "
                        + received + " of " + ra.total + " bytes of message " + Long.toHexString(ra.msgId),
                        cause));
                case Arrival a -> {
                    a.reassembly = null;
                    withdraw(a);
                }
                case PipelineSlot s -> s.abort();
                case StreamSlot s -> s.abort();
                case null, default -> {
                }
            }
        }
        if (budget.exceeded()) {
            // It went over its bound: what it left in the unexpected queue goes too, not only what was unfinished.
            for (Arrival a : List.copyOf(queued)) {
                withdraw(a);
            }
        }
    }

    private void withdraw(Arrival a) {
        queued.remove(a);
        matcher.withdraw(a);
        drop(a);
    }

    /** Releases an arrival nobody will receive: its data and its charge. */
    private void drop(Arrival a) {
        if (a.data != null) {
            a.data.release();
            a.data = null;
        }
        if (a.reassembly != null) {
            // The rest of it is dropped as it arrives, and what it holds goes now: its charge goes with the arrival's.
            Reassembly ra = a.reassembly;
            ra.target = null;
            ra.parts.countOnly();
            endWhole(ra);
            a.reassembly = null;
        }
        budget.release(a.charged);
        a.charged = 0;
    }

    /** This endpoint's messages in the worker's unexpected queue. */
    int queuedCount() {
        return queued.size();
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
