package io.nucx.transport.tcp;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandler;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.handler.codec.CorruptedFrameException;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.handler.ssl.SslHandler;
import io.nucx.transport.AmFrame;
import io.nucx.transport.Buffers;
import io.nucx.transport.LaneBacklog;
import io.nucx.transport.PayloadPlacement;
import io.nucx.transport.PipelineLinks;
import io.nucx.transport.ShortFrameHandler;
import io.nucx.transport.ShortPayload;

import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

import static io.nucx.transport.tcp.AmFrameLayout.AM_ID_OFFSET;
import static io.nucx.transport.tcp.AmFrameLayout.FLAGS_OFFSET;
import static io.nucx.transport.tcp.AmFrameLayout.HEADER_LENGTH_OFFSET;
import static io.nucx.transport.tcp.AmFrameLayout.PAYLOAD_LENGTH_OFFSET;
import static io.nucx.transport.tcp.AmFrameLayout.PREFIX_LENGTH;

/**
 * Splits a byte stream into {@link AmFrame}s ({@link AmFrameLayout}). The reader index is left alone until a whole
 * frame is there; lengths over the limits raise {@link TooLongFrameException} naming the value and the limit
 * before anything is buffered, and the lane's handler closes only that connection.
 *
 * <p>Placed payloads: when a large frame's header has arrived but not its payload, and the lane's handler says where
 * the payload goes ({@link PayloadPlacement}), the rest of it is read from the socket straight into that memory: the
 * lane's {@link PlacingRecvAllocator} hands the channel a slice of it as the next read's buffer, and the read after
 * the payload is a small one, so that the next frame's header comes with little of its payload and that payload can
 * be placed too; that only where this decoder is the first to see the socket's bytes. A large frame that came whole
 * in a read (with the frames before it) is copied into the place its handler gives rather than handed up as a slice
 * of the read. Both only on lanes that place (NUCX_TCP_PLACE, not under TLS, not io_uring).
 *
 * <p>Short frames in place: a whole frame with no flags, a header of one long and a payload of at most
 * {@link #SHORT_PAYLOAD} bytes (tcp's whole eager short range) is offered to the lane's last handler as its parts when
 * that handler takes them ({@link ShortFrameHandler}: a tagged message, a stream write or an active message copied
 * from the read straight into the receive buffer, with no header and payload buffers and no {@link AmFrame}, as shm
 * hands its ring records) and no inbound handler stands between; anything it does not take is decoded as a frame, in
 * the same order.
 *
 * <p>A turn's share: where this decoder is the first to see the socket's bytes, or the first after TLS's record layer
 * ({@link #readsFirst}), it decodes no more frames in a loop turn than the lane's last handler takes in that turn
 * ({@link ShortFrameHandler#turnShareLeft}); the rest stay in the cumulation as bytes, the channel reads nothing more,
 * and the next turn (a task scheduled after its I/O) goes on where this one stopped. A sender that outruns the receiver
 * costs that receiver no object per frame.
 *
 * <p>A frame flagged {@link AmFrame#FLAG_PLACED} may exceed the payload limit, which bounds what this lane buffers:
 * its receiver asked for it so, and it is read into that receiver's memory. One that nothing here places is refused
 * as any frame over the limit (unless it is wholly read already, and costs nothing more to hand up).
 */
public final class AmFrameDecoder extends ByteToMessageDecoder implements LaneBacklog.FrameHolder {

    /** Payloads up to this size are copied out of the cumulation, larger ones sliced ({@link #copy}). */
    static final int COPY_PAYLOAD = 1024;
    /**
     * Short frames with payloads up to this size are offered in place ({@link #offerShort}): the most a frame of tcp's
     * short sends carries (its iface's am_short bound, 8 KiB with the header). Their handler copies them once, where
     * a frame would cost a slice of the cumulation (over {@link #COPY_PAYLOAD}) and then the same copy.
     */
    static final int SHORT_PAYLOAD = 8192;
    /** Payloads from this size on are worth a read of their own ({@link PayloadPlacement}). */
    static final int PLACE_FROM = 16 * 1024;
    /** The read after a placed payload: the next frame's prefix and header, and a little of its payload. */
    static final int HEADER_READ = 512;

    /**
     * The largest payload and header of a placed frame ({@link AmFrame#FLAG_PLACED}) this side takes: one Java buffer
     * with the prefix. What a sender sends is smaller ({@link TcpIface#maxPlacedFrame}); what bounds it here is that
     * the receiver gave the memory.
     */
    static final long MAX_PLACED_PAYLOAD = Integer.MAX_VALUE - PREFIX_LENGTH;
    /** {@link #place}'s answers: the payload is being placed; ask again once the frames before it went up; not here. */
    private static final int PLACED = 1;
    private static final int LATER = 0;
    private static final int REFUSED = -1;

    private final int maxHeader;
    private final long maxPayload;
    /** Payloads may be placed: the channel reads through {@link PlacingRecvAllocator} (NUCX_TCP_PLACE, no TLS). */
    private final boolean placing;
    /** The frame whose payload is being read into its place, or null. */
    private Placed placed;
    private final Placed placedFrame = new Placed();
    /** The slice of {@code placed.target} the channel's read was given, until that read comes back; or null. */
    private ByteBuf socketRead;
    /** A placed payload just ended: the next read is a {@link #HEADER_READ}. */
    private boolean headerReadNext;
    /** This read batch fed a placed payload without completing it: nothing went up for what was read. */
    private boolean placedWithoutFrame;
    /** Payload bytes the socket wrote straight into their place (the rest of a placed payload was copied). */
    private long placedBytes;
    /** Payload bytes of every frame given a place, however they got there (read there, or copied from a read). */
    private long placedFrameBytes;
    /** Short frames the lane's handler took as their parts. */
    private long shortFrames;
    /** The payload {@link #offerShort} hands, reused. */
    private final ReadPayload shortPayload = new ReadPayload();
    /** Frames wait in the cumulation beyond this turn's share, reads paused: {@link #nextTurn} is scheduled. */
    private boolean nextTurnScheduled;
    /** {@link #nextTurn} as a task, made once. */
    private Runnable nextTurnTask;
    /** The channel closed: whatever is left is decoded at once, share or not. */
    private boolean decodingLast;
    /** The channel went inactive: no partial payload is given a place any more (decodeLast reports the cut frame). */
    private boolean inputEnded;
    /** Loop turns that ended with frames left in the cumulation for the next ({@link #turnsDeferred()}). */
    private long turnsDeferred;

    /** A frame waiting for its placed payload; one object per decoder, reused (at most one frame waits at a time). */
    private static final class Placed {
        int amId;
        int flags;
        ByteBuf header;
        ByteBuf target;

        Placed set(int amId, int flags, ByteBuf header, ByteBuf target) {
            this.amId = amId;
            this.flags = flags;
            this.header = header;
            this.target = target;
            return this;
        }

        void release() {
            header.release();
            target.release();
            header = null;
            target = null;
        }
    }

    public AmFrameDecoder(int maxHeader, long maxPayload) {
        this(maxHeader, maxPayload, false);
    }

    /** @param placing whether the channel reads through a {@link PlacingRecvAllocator} over this decoder */
    AmFrameDecoder(int maxHeader, long maxPayload, boolean placing) {
        this.maxHeader = maxHeader;
        this.maxPayload = maxPayload;
        this.placing = placing;
        setCumulator(AmFrameDecoder::cumulate);
    }

    /**
     * Netty's merging cumulator, with the copies done by {@link Buffers}: Netty's own grows the cumulation through
     * {@code ensureWritable}, whose copy between two direct buffers without {@code sun.misc.Unsafe} (its default on JDK
     * 25) makes a NIO view per call, an allocation per frame that spans two reads. Releases {@code in}.
     */
    private static ByteBuf cumulate(ByteBufAllocator alloc, ByteBuf cumulation, ByteBuf in) {
        if (cumulation == in) {
            in.release();
            return cumulation;
        }
        if (!cumulation.isReadable() && in.isContiguous()) {
            cumulation.release();
            return in;
        }
        try {
            int required = in.readableBytes();
            if (required <= cumulation.writableBytes() && cumulation.refCnt() == 1 && !cumulation.isReadOnly()) {
                Buffers.append(in, in.readerIndex(), cumulation, required);
                return cumulation;
            }
            // A new buffer (a slice of the old one may still be in use when refCnt > 1: no write behind its back),
            // grown as Netty grows one (doubling), so a frame of many reads is not copied over at every read; the old
            // one is released only once both parts are in.
            int readable = cumulation.readableBytes();
            ByteBuf grown = alloc.ioBuffer(alloc.calculateNewCapacity(readable + required, Integer.MAX_VALUE));
            try {
                Buffers.append(cumulation, cumulation.readerIndex(), grown, readable);
                Buffers.append(in, in.readerIndex(), grown, required);
            } catch (RuntimeException | Error e) {
                grown.release();
                throw e;
            }
            cumulation.release();
            return grown;
        } finally {
            in.release();
        }
    }

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
        int share = turnShare(ctx);
        while (in.readableBytes() >= PREFIX_LENGTH) {
            if (share <= 0) {
                deferToNextTurn(ctx);
                return;
            }
            int start = in.readerIndex();
            int amId = in.getUnsignedByte(start + AM_ID_OFFSET);
            int flags = in.getUnsignedByte(start + FLAGS_OFFSET);
            int headerLength = in.getUnsignedShortLE(start + HEADER_LENGTH_OFFSET);
            long payloadLength = in.getUnsignedIntLE(start + PAYLOAD_LENGTH_OFFSET);
            if (amId == 0) {
                in.skipBytes(in.readableBytes()); // the stream is lost: do not report it again on close
                throw new CorruptedFrameException("frame with am id 0 (reserved) at stream offset "
                        + start + " from " + ctx.channel().remoteAddress());
            }
            if (headerLength > maxHeader) {
                in.skipBytes(in.readableBytes()); // the stream is lost: do not report it again on close
                throw new TooLongFrameException("frame header length " + headerLength + " exceeds limit "
                        + maxHeader + " (am id " + amId + ") from " + ctx.channel().remoteAddress());
            }
            // Over the limit only as a placed frame: its payload goes into memory its receiver gave, not ours.
            boolean overLimit = payloadLength > maxPayload;
            if (overLimit && !(placing && (flags & AmFrame.FLAG_PLACED) != 0
                    && payloadLength <= MAX_PLACED_PAYLOAD - headerLength)) {
                in.skipBytes(in.readableBytes()); // the stream is lost: do not report it again on close
                throw new TooLongFrameException("frame payload length " + payloadLength + " exceeds limit "
                        + maxPayload + " (am id " + amId + ((flags & AmFrame.FLAG_PLACED) != 0
                        ? ", placed, but this lane does not place payloads" : "") + ") from "
                        + ctx.channel().remoteAddress());
            }
            int frameLength = PREFIX_LENGTH + headerLength + (int) payloadLength;
            if (in.readableBytes() < frameLength) {
                // Once the input has ended no payload is begun in a place: the frame is cut, decodeLast reports it.
                if (placing && !inputEnded && !decodingLast && (payloadLength >= PLACE_FROM || overLimit)
                        && in.readableBytes() >= PREFIX_LENGTH + headerLength
                        && place(ctx, in, amId, flags, headerLength, (int) payloadLength, out) == REFUSED
                        && overLimit) {
                    in.skipBytes(in.readableBytes()); // the stream is lost: do not report it again on close
                    throw new TooLongFrameException("placed frame payload length " + payloadLength
                            + " exceeds limit " + maxPayload + " and nothing here asked for it (am id " + amId
                            + ") from " + ctx.channel().remoteAddress());
                }
                return;
            }
            if (flags == 0 && headerLength == Long.BYTES && payloadLength <= SHORT_PAYLOAD) {
                ShortFrameHandler to = shortFrameHandler(ctx);
                if (to != null) {
                    if (!out.isEmpty()) {
                        if (!decodingLast) {
                            return; // the frames before it go up first; decode is called again for the rest
                        }
                        // decodeLast is called once: the rest go up as frames, in order
                    } else if (offerShort(ctx, to, in, amId, start, (int) payloadLength)) {
                        if (ctx.isRemoved()) {
                            return;
                        }
                        share--;
                        continue;
                    }
                }
            }
            if (placing && payloadLength >= PLACE_FROM) {
                // Whole already (a read brought it with the frames before it): copied into its place, if it has one,
                // rather than sliced, which would cost an object per message and the receiver the same copy later.
                int placement = place(ctx, in, amId, flags, headerLength, (int) payloadLength, out);
                if (placement == LATER) {
                    return;
                }
                if (placement == PLACED) {
                    if (ctx.isRemoved()) {
                        return;
                    }
                    share--;
                    continue;
                }
            }
            ByteBuf header = copy(ctx, in, start + PREFIX_LENGTH, headerLength);
            int payloadAt = start + PREFIX_LENGTH + headerLength;
            ByteBuf payload = payloadLength == 0 ? Unpooled.EMPTY_BUFFER
                    : payloadLength <= COPY_PAYLOAD ? copy(ctx, in, payloadAt, (int) payloadLength)
                    : in.retainedSlice(payloadAt, (int) payloadLength);
            in.readerIndex(start + frameLength);
            out.add(AmFrame.of(amId, flags, header, payload));
            if (ctx.isRemoved()) {
                return;
            }
            share--;
        }
    }

    /**
     * Frames the lane's last handler takes in this loop turn, when this decoder reads the socket's bytes first or
     * right behind TLS ({@link #readsFirst}: then what it leaves waits as bytes) and the input has not ended (then
     * everything left goes up at once); else no bound. Asked per decode call: the frames of the call before went up in
     * between.
     */
    private int turnShare(ChannelHandlerContext ctx) {
        if (decodingLast || !readsFirst(ctx)) {
            return Integer.MAX_VALUE;
        }
        ChannelHandlerContext last = ctx.pipeline().lastContext();
        return last != null && last.handler() instanceof ShortFrameHandler to ? to.turnShareLeft() : Integer.MAX_VALUE;
    }

    /**
     * Whether what this decoder leaves in its cumulation is all that waits once reads pause: it is the pipeline's first
     * handler, or the one right after an {@link SslHandler} that is first. TLS's record layer unwraps every whole
     * record it holds before its read batch ends (or, while a delegated handshake task runs, unwraps them itself once
     * it is done), and with reads paused asks for another read only when a batch handed nothing up or its handshake
     * is not done: nothing whole waits there for a read the pause would not let come, and the reads it asks are few.
     * Another handler before the decoder might hold bytes of its own until such a read.
     */
    private boolean readsFirst(ChannelHandlerContext ctx) {
        ChannelHandler first = ctx.pipeline().first();
        if (first == this) {
            return true;
        }
        ChannelHandlerContext before = first instanceof SslHandler ? PipelineLinks.previous(ctx) : null;
        return before != null && before.handler() == first; // read through Netty's link (null: no link, no share)
    }

    /** Whole frames past this turn's share wait in the cumulation for the next turn's task (reads paused). */
    @Override
    public boolean holdsPeerFrames() {
        return nextTurnScheduled;
    }

    /**
     * This turn's share is used: reads pause and the rest of the cumulation is decoded in the next turn, by a task
     * scheduled (it runs after that turn's I/O, as the lane's own backlog does, so the loop's other channels and timers
     * come between two shares).
     */
    private void deferToNextTurn(ChannelHandlerContext ctx) {
        if (nextTurnScheduled) {
            return;
        }
        nextTurnScheduled = true;
        turnsDeferred++;
        ctx.channel().config().setAutoRead(false);
        if (nextTurnTask == null) {
            nextTurnTask = () -> nextTurn(ctx);
        }
        ctx.executor().schedule(nextTurnTask, 0, TimeUnit.NANOSECONDS);
    }

    /**
     * The next turn's share of what waits: decoded as a read of nothing new, then the end of a read batch (the lane's
     * handler confirms what it took and begins a new share); reads resume once nothing waits beyond the share.
     */
    private void nextTurn(ChannelHandlerContext ctx) {
        nextTurnScheduled = false;
        if (ctx.isRemoved() || !ctx.channel().isActive()) {
            return; // closing: what is left is decoded (or released) there
        }
        try {
            channelRead(ctx, Unpooled.EMPTY_BUFFER);
            channelReadComplete(ctx);
        } catch (Exception e) {
            ctx.fireExceptionCaught(e); // as Netty reports a throw from channelRead
        }
        if (!nextTurnScheduled && ctx.channel().isActive()) {
            ctx.channel().config().setAutoRead(true);
        }
    }

    /** Loop turns that ended with frames left in the cumulation for the next (a turn's share was used). */
    public long turnsDeferred() {
        return turnsDeferred;
    }

    /**
     * The lane's last handler, when it takes short frames as their parts ({@link ShortFrameHandler}) and no handler
     * between this decoder and it would see frames (an inbound one: a p2p lane's first-frame reader, a test's probe);
     * else null. Looked at per frame, since Netty tells no one of a handler added or removed: a few links' reads.
     */
    private static ShortFrameHandler shortFrameHandler(ChannelHandlerContext ctx) {
        ChannelHandlerContext last = ctx.pipeline().lastContext();
        if (last == null || !(last.handler() instanceof ShortFrameHandler to)) {
            return null;
        }
        return PipelineLinks.noneBetween(PipelineLinks.previous(last), ctx, ChannelInboundHandler.class,
                PipelineLinks.LANE_HANDLERS_LOOKED_AT) ? to : null;
    }

    /**
     * Offers the whole short frame at {@code start} to {@code to} as its parts, its payload where it lies in
     * {@code in} (as shm hands a ring record): true when taken (a throw is reported as one from {@code channelRead}
     * and the frame is gone), its bytes then read; false, and it is decoded as a frame.
     */
    private boolean offerShort(ChannelHandlerContext ctx, ShortFrameHandler to, ByteBuf in, int amId, int start,
                               int payloadLength) {
        int headerAt = start + PREFIX_LENGTH;
        long header = in.getLongLE(headerAt);
        shortPayload.at(in, headerAt + Long.BYTES, payloadLength, ctx.alloc());
        boolean taken;
        try {
            taken = to.shortFrameArrived(amId, header, shortPayload);
        } catch (Throwable t) {
            in.readerIndex(headerAt + Long.BYTES + payloadLength);
            ctx.fireExceptionCaught(t); // as a throw from the handler's channelRead reaches its exceptionCaught
            return true;
        } finally {
            shortPayload.at(null, 0, 0, null);
        }
        if (taken) {
            in.readerIndex(headerAt + Long.BYTES + payloadLength);
            shortFrames++;
        }
        return taken;
    }

    /** A short frame's payload where it lies in the cumulation, valid during its handler's call only; reused. */
    private static final class ReadPayload implements ShortPayload {
        private ByteBuf in;
        private int index;
        private int length;
        private ByteBufAllocator alloc;

        void at(ByteBuf in, int index, int length, ByteBufAllocator alloc) {
            this.in = in;
            this.index = index;
            this.length = length;
            this.alloc = alloc;
        }

        @Override
        public int length() {
            return length;
        }

        @Override
        public void copyTo(ByteBuf dst, int at) {
            copyTo(0, length, dst, at);
        }

        @Override
        public void copyTo(int from, int n, ByteBuf dst, int at) {
            ByteBuf read = live();
            Objects.checkFromIndexSize(from, n, length);
            if (n != 0) {
                Buffers.copy(read, index + from, dst, at, n);
            }
        }

        @Override
        public ByteBuf copyOut(int from, int n) {
            ByteBuf read = live();
            Objects.checkFromIndexSize(from, n, length);
            if (n == 0) {
                return Unpooled.EMPTY_BUFFER;
            }
            ByteBuf out = alloc.heapBuffer(n, n);
            Buffers.copy(read, index + from, out, 0, n);
            return out.writerIndex(n);
        }

        private ByteBuf live() {
            if (in == null) {
                throw new IllegalStateException("a short payload used after its handler returned");
            }
            return in;
        }
    }

    /**
     * The frame at {@code in}'s reader index has its header and maybe not its whole payload: if the lane's handler
     * says where the payload goes, what has come of it is copied there and the frame is taken out of {@code in}; a
     * whole one is added to {@code out} with that buffer as its payload; of one that is not, the rest will be read into
     * its place. Frames decoded before it go up first (the handler places by what it knows).
     *
     * @return {@link #PLACED}, {@link #LATER} (frames before it go up first) or {@link #REFUSED}
     */
    private int place(ChannelHandlerContext ctx, ByteBuf in, int amId, int flags, int headerLength, int payloadLength,
                      List<Object> out) {
        if (!out.isEmpty()) {
            return decodingLast ? REFUSED : LATER; // decode is called again once they went up; decodeLast is not
        }
        int start = in.readerIndex();
        int payloadAt = start + PREFIX_LENGTH + headerLength;
        boolean whole = in.writerIndex() - payloadAt >= payloadLength;
        ChannelHandler last = ctx.pipeline().last();
        // The rest of a payload is read into its place only if this decoder is the first to see the socket's bytes;
        // a whole one is only copied there.
        if (!(last instanceof PayloadPlacement placement) || !whole && ctx.pipeline().first() != this) {
            return REFUSED;
        }
        ByteBuf header = copy(ctx, in, start + PREFIX_LENGTH, headerLength);
        ByteBuf target;
        try {
            target = placement.placePayload(amId, header, payloadLength);
        } catch (RuntimeException | Error e) {
            header.release();
            throw e;
        }
        if (target == null) {
            header.release();
            return REFUSED;
        }
        if (target.writerIndex() != 0 || target.writableBytes() != payloadLength) {
            header.release();
            target.release();
            throw new IllegalStateException("a placement of " + payloadLength + " bytes gave " + target);
        }
        int arrived = whole ? payloadLength : in.writerIndex() - payloadAt;
        Buffers.append(in, payloadAt, target, arrived);
        placedFrameBytes += payloadLength;
        in.readerIndex(payloadAt + arrived);
        if (whole) {
            out.add(AmFrame.of(amId, flags, header, target));
        } else {
            placed = placedFrame.set(amId, flags, header, target);
        }
        return PLACED;
    }

    /**
     * The buffer for the channel's next read, from its {@link PlacingRecvAllocator}: the rest of a placed payload, a
     * {@link #HEADER_READ} right after one, or null for the channel's own choice.
     */
    ByteBuf nextRead(ByteBufAllocator alloc) {
        Placed p = placed;
        if (p != null) {
            ByteBuf t = p.target;
            if (!t.hasMemoryAddress()) {
                return null; // the channel reads into its own buffer; channelRead copies
            }
            if (socketRead != null) {
                socketRead.release(); // a read that never came back with it (Netty released its own reference)
            }
            socketRead = t.retainedSlice(t.writerIndex(), t.writableBytes()).clear();
            return socketRead.retain(); // one reference for the channel's read, one kept to know it again
        }
        if (headerReadNext) {
            headerReadNext = false;
            return alloc.ioBuffer(HEADER_READ, HEADER_READ);
        }
        return null;
    }

    /** Short frames handed to the lane's handler as their parts so far ({@link ShortFrameHandler}). */
    public long shortFrames() {
        return shortFrames;
    }

    /**
     * Payload bytes of the frames given a place so far, read there from the socket or copied there from the read that
     * brought them (which of the two depends on when the read came: {@link #placedBytes} counts the first).
     */
    public long placedFrameBytes() {
        return placedFrameBytes;
    }

    /** Payload bytes the socket wrote straight into their place so far. */
    public long placedBytes() {
        return placedBytes;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) throws Exception {
        Placed p = placed;
        if (p == null || !(msg instanceof ByteBuf buf)) {
            super.channelRead(ctx, msg);
            return;
        }
        ByteBuf target = p.target;
        if (buf == socketRead) { // the socket wrote into the target's memory: count it in
            socketRead = null;
            int n = buf.readableBytes();
            target.writerIndex(target.writerIndex() + n);
            placedBytes += n;
            buf.release(2); // the read's reference and ours
            buf = null;
        } else {
            int n = Math.min(buf.readableBytes(), target.writableBytes());
            Buffers.append(buf, buf.readerIndex(), target, n);
            buf.skipBytes(n);
        }
        if (target.isWritable()) {
            placedWithoutFrame = true;
            if (buf != null) {
                buf.release();
            }
            return;
        }
        placedWithoutFrame = false;
        placed = null;
        headerReadNext = true;
        try {
            ctx.fireChannelRead(AmFrame.of(p.amId, p.flags, p.header, target));
        } finally {
            if (buf != null) {
                if (buf.isReadable()) {
                    super.channelRead(ctx, buf); // the next frames: the ordinary way
                } else {
                    buf.release();
                }
            }
        }
    }

    /**
     * {@link PayloadPlacement#RELINQUISH}: a payload being placed moves into a buffer of this lane's own, what arrived
     * of it copied over while the memory is still the receiver's; its frame still comes up when whole.
     */
    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) throws Exception {
        Placed p = placed;
        if (evt == PayloadPlacement.RELINQUISH && p != null) {
            ByteBuf t = p.target;
            ByteBuf own = ctx.alloc().directBuffer(t.capacity(), t.capacity());
            Buffers.append(t, 0, own, t.writerIndex());
            t.release();
            if (socketRead != null) {
                socketRead.release();
                socketRead = null;
            }
            p.target = own;
        }
        super.userEventTriggered(ctx, evt);
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) throws Exception {
        if (placedWithoutFrame) {
            placedWithoutFrame = false;
            if (!ctx.channel().config().isAutoRead()) {
                ctx.read(); // as ByteToMessageDecoder does for bytes that made no frame: whoever reads waits for one
            }
        }
        if (nextTurnScheduled) {
            // Frames wait for the next turn with reads paused: no read is asked for (the decoder's own end of batch
            // would ask one when this batch made no frame), the lane's handler still ends its turn.
            ctx.fireChannelReadComplete();
            return;
        }
        super.channelReadComplete(ctx);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
        inputEnded = true; // what is left is decoded now: nothing of it is begun in a place (its frame is cut)
        Placed p = placed;
        if (p != null) {
            placed = null;
            int got = PREFIX_LENGTH + p.header.readableBytes() + p.target.writerIndex();
            p.release();
            ctx.fireExceptionCaught(new CorruptedFrameException("connection from " + ctx.channel().remoteAddress()
                    + " closed in the middle of a frame (" + got + " bytes of it received)"));
        }
        super.channelInactive(ctx);
    }

    @Override
    protected void handlerRemoved0(ChannelHandlerContext ctx) {
        if (placed != null) {
            placed.release();
            placed = null;
        }
        if (socketRead != null) {
            socketRead.release();
            socketRead = null;
        }
    }

    /**
     * Headers and small payloads are copied into pooled buffers of their own rather than sliced out of the cumulation:
     * Netty's default allocator makes a new object for each slice, and for a few bytes the copy costs less than the
     * allocation (and lets the cumulation be reused sooner). Larger payloads are slices: no copy.
     */
    private static ByteBuf copy(ChannelHandlerContext ctx, ByteBuf in, int index, int length) {
        ByteBuf out = ctx.alloc().heapBuffer(length, length);
        Buffers.copy(in, index, out, 0, length);
        return out.writerIndex(length);
    }

    @Override
    protected void decodeLast(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
        decodingLast = true;
        decode(ctx, in, out);
        if (in.isReadable()) {
            int pending = in.readableBytes();
            in.skipBytes(pending);
            throw new CorruptedFrameException("connection from " + ctx.channel().remoteAddress()
                    + " closed in the middle of a frame (" + pending + " bytes of it received)");
        }
    }
}
