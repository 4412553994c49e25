package io.nucx.protocol.stream;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.channel.PendingWriteQueue;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.channel.socket.ChannelOutputShutdownException;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import io.netty.util.concurrent.ScheduledFuture;
import io.netty.util.internal.logging.InternalLogger;
import io.netty.util.internal.logging.InternalLoggerFactory;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.EndpointServices;
import io.nucx.protocol.ProtocolCodec;
import io.nucx.protocol.ProtocolException;
import io.nucx.protocol.ProtocolFamily;
import io.nucx.transport.AmFrame;
import io.nucx.transport.ShortPayload;

import java.nio.channels.ClosedChannelException;
import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * An endpoint's ordered byte stream (UCX's {@code ucp_stream_send_nbx} / {@code ucp_stream_recv_nbx}): what is
 * written as {@link StreamData} arrives at the peer's pipeline as plain {@code ByteBuf}s, in write order, apart from
 * tagged messages.
 *
 * <p><b>Carried, not re-implemented.</b> This codec sits above the tag codecs (tail side) and sends nothing itself
 * but flow control: a {@link StreamData} goes down to the eager codec, which looks up the protocol for the
 * {@code STREAM_SEND} selection key in the same tables as tagged sends (eager short / copy / zero-copy, or rendezvous
 * with GET or PUT where the cost model says so) and sends it with the stream's own first-frame ids
 * ({@link AmIds#STREAM_ONLY}, STREAM_FIRST, STREAM_ZCOPY_*, STREAM_RTS). Those ids never reach the tag matcher, so a
 * wildcard {@code tagRecv} cannot take stream bytes; on arrival the carrying codec fires a {@link StreamSlot} up the
 * pipeline when the first frame arrives and completes it when the last byte has. Frames other than rendezvous data
 * travel in order on the AM lane, so the slots arrive in write order, and this codec delivers each write only once
 * every write before it has been delivered (as {@code TagOrder} does for tagged messages, separately: the two
 * orders do not wait for each other).
 *
 * <p><b>Reading</b> follows the endpoint channel's {@code read()} as a socket's does: with auto-read on, writes go up
 * as they complete; with it off, each {@code read()} delivers what is complete (one batch, then
 * {@code channelReadComplete}) or, if nothing is, the next write to complete.
 *
 * <p><b>Backpressure</b> is a receive window, as TCP's: a sender has {@link #WINDOW} bytes of credit, each write
 * spends its length, and the receiver gives credit back (STREAM_CREDIT, {@code bytes:u64}) as it <em>delivers</em>
 * bytes, not as they arrive, once a quarter window has piled up. A receiver that stops reading therefore stops its
 * peer after one window: the peer's writes wait here, counted in its endpoint's pending bytes, so its channel turns
 * unwritable, and they go out as credit returns. The lanes themselves keep being read, as a kernel keeps processing
 * a socket's ACKs while its application does not read: stopping them would also stop the acknowledgements of this
 * endpoint's own sends (a rendezvous write waits for its RTR), its keepalive and tagged traffic, and a paused reader
 * that waits for its own write to complete would wait forever. A write larger than half the window goes once half
 * the window is free (credit may go negative), so a write of any size can go and stay one message (one rendezvous,
 * zero-copy where it pays); the receiver reports at a quarter window, so a sender always regains half a window once
 * the receiver has read everything: no deadlock, and the receiver holds at most one window plus one write.
 *
 * <p><b>End of stream.</b> {@link StreamData#end()} (a socket's {@code shutdownOutput}) sends STREAM_FIN behind every
 * byte; the peer fires {@link ChannelInputShutdownEvent} once it has delivered them, and answers STREAM_FIN_ACK with
 * the rest of its credit. A close of an endpoint whose stream carried bytes sends the end first (after the writes
 * still waiting for credit, at most NUCX_KEEPALIVE_TIMEOUT), and the endpoint's graceful close waits until the peer
 * has delivered every byte (all credit back) and the end (its STREAM_FIN_ACK), so a close loses nothing the peer is
 * still reading: a reader with auto-read off that has every byte and not yet the end still sees the end when it
 * reads within that bound, as a socket's reader finds the FIN after its peer closed. A closed NucxChannel keeps its
 * endpoint reading, so its peer's end is acknowledged without a read. Loop only.
 */
public final class StreamCodec extends ChannelDuplexHandler implements ProtocolCodec {

    private static final InternalLogger LOG = InternalLoggerFactory.getInstance(StreamCodec.class);

    /** Its name in an endpoint's pipeline. */
    public static final String NAME = "nucx.stream";

    /** Bytes a sender may have written that the receiver has not delivered yet: the receive window. */
    public static final int WINDOW = 4 << 20;

    /** STREAM_CREDIT's header: {@code bytes:u64}. */
    static final int CREDIT_LENGTH = 8;

    static final int[] AM_IDS = {AmIds.STREAM_CREDIT, AmIds.STREAM_FIN, AmIds.STREAM_FIN_ACK};

    /**
     * The stream family: no protocol of its own (stream writes take the tag eager and rendezvous protocols, selected
     * by {@code STREAM_SEND}); its ids are the flow-control ones. Its codec goes at the tail side of the others.
     */
    public static final ProtocolFamily FAMILY = new ProtocolFamily("stream", List.of(), AM_IDS,
            (pipeline, endpoint, worker) -> {
                StreamCodec codec = new StreamCodec(endpoint);
                pipeline.addLast(NAME, codec);
                return codec;
            });

    /** The end of the peer's stream, in the inbound queue behind its last slot. */
    private static final Object FIN = new Object();

    private final EndpointServices endpoint;
    private ChannelHandlerContext ctx;

    // ---------------------------------------------------------------- sending
    /** Writes waiting for credit, in order; their bytes count toward the endpoint's writability. */
    private PendingWriteQueue waiting;
    private long credit = WINDOW;
    private long bytesSent;
    /** An end was written (sent or waiting): no byte may follow. */
    private boolean outputEnded;
    /** The last write's future: an empty write completes after it, keeping completions in write order. */
    private ChannelFuture lastWrite;
    /** STREAM_FIN went down; the peer's STREAM_FIN_ACK came back. */
    private boolean finSent;
    private boolean finAcked;
    /**
     * Completes when the peer has delivered every byte sent (all credit back) and the end if one went (its
     * STREAM_FIN_ACK); made for a graceful close.
     */
    private Promise<Void> allDelivered;
    /** A close waiting for the writes that wait for credit; its bound. */
    private ChannelPromise deferredClose;
    private ScheduledFuture<?> closeBound;

    // ---------------------------------------------------------------- receiving
    /** Slots in write order, and {@link #FIN} last. */
    private final ArrayDeque<Object> inbound = new ArrayDeque<>();
    /** A {@code read()} waits for data (auto-read off). */
    private boolean demand;
    /** Inside a lane's read batch: its {@code channelReadComplete} follows, so none is fired here. */
    private boolean batchOpen;
    private boolean draining;
    /** Bytes delivered and not yet credited back to the sender. */
    private long unreported;
    private boolean finArrived;
    private boolean ended;
    /**
     * The inbound queue's last slot while short writes of this read batch are gathered into it ({@link
     * #shortWriteArrived}); null once the batch ended or the slot was delivered.
     */
    private StreamSlot gathering;
    /**
     * The last gathering slot and its buffer, kept once delivered for the next read batch's short writes: a short
     * write costs no object and no pool round trip. The buffer only when the reader released it (our reference the
     * last) and it is small ({@link #SPARE_MOST}: it is held while the endpoint lives, until its stream ends).
     */
    private StreamSlot spareSlot;
    private ByteBuf spareBuffer;
    /** The largest gathering buffer kept for the next batch: a batch of short writes' worth, not a grown one's. */
    static final int SPARE_MOST = 1024;

    /** A gathering slot's first buffer, and the most bytes one gathers: a socket's read returns a few KiB so. */
    static final int GATHER_FIRST = 256;
    static final int GATHER_MOST = 64 * 1024;

    public StreamCodec(EndpointServices endpoint) {
        this.endpoint = endpoint;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        this.ctx = ctx;
        this.waiting = new PendingWriteQueue(ctx);
    }

    // ---------------------------------------------------------------- outbound

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        if (!(msg instanceof StreamData d)) {
            ctx.write(msg, promise);
            return;
        }
        if (outputEnded) {
            d.release();
            promise.tryFailure(new ChannelOutputShutdownException("the stream of " + ctx.channel()
                    + " was shut down for output: nothing may be written after its end"));
            return;
        }
        if (d.isEnd()) {
            outputEnded = true;
        }
        if (waiting.isEmpty() && mayPass(d)) {
            send(d, promise);
        } else {
            waiting.add(d, promise);
        }
    }

    /** Whether {@code d} may go now: credit for it, or for half the window when it is larger (see the class). */
    private boolean mayPass(StreamData d) {
        int n = d.content().readableBytes();
        return n == 0 || credit >= Math.min(n, WINDOW / 2);
    }

    /** Sends {@code d} down to the carrying codecs (an end as STREAM_FIN). Owns {@code d}. */
    private void send(StreamData d, ChannelPromise promise) {
        int n = d.content().readableBytes();
        if (d.isEnd() || n == 0) {
            boolean end = d.isEnd();
            d.release();
            if (end) {
                finSent = true;
                ctx.write(AmFrame.of(AmIds.STREAM_FIN, Unpooled.EMPTY_BUFFER), promise);
            } else {
                completeAfterLast(promise); // no frame for no bytes, as a socket writes none
            }
            return;
        }
        credit -= n;
        bytesSent += n;
        if (!promise.isVoid()) {
            lastWrite = promise;
        }
        ctx.write(d, promise);
    }

    private void completeAfterLast(ChannelPromise promise) {
        ChannelFuture before = lastWrite;
        if (before == null || before.isDone()) {
            if (before != null && !before.isSuccess()) {
                promise.tryFailure(before.cause());
            } else {
                promise.trySuccess();
            }
            return;
        }
        before.addListener(f -> {
            if (f.isSuccess()) {
                promise.trySuccess();
            } else {
                promise.tryFailure(f.cause());
            }
        });
    }

    /** Credit came back: the writes it now lets pass go, in order. */
    private void sendWaiting() {
        boolean sent = false;
        while (!waiting.isEmpty()) {
            Object m = waiting.current();
            if (!(m instanceof StreamData d) || !mayPass(d)) {
                break;
            }
            ReferenceCountUtil.retain(d); // remove() releases the message it takes out
            ChannelPromise p = waiting.remove();
            send(d, p);
            sent = true;
        }
        if (sent) {
            ctx.flush();
        }
        if (waiting.isEmpty() && deferredClose != null) {
            ChannelPromise close = deferredClose;
            deferredClose = null;
            closeBound.cancel(false);
            ctx.close(close);
        }
    }

    /**
     * A close of an endpoint whose stream carried bytes ends the stream first (after the writes waiting for credit,
     * at most the endpoint's close bound), so the peer sees the end behind the last byte.
     */
    @Override
    public void close(ChannelHandlerContext ctx, ChannelPromise promise) {
        if (ended || deferredClose != null || (bytesSent == 0 && waiting.isEmpty())) {
            ctx.close(promise);
            return;
        }
        if (!outputEnded) {
            write(ctx, StreamData.end(), ProtocolCodec.quietPromise(ctx));
        }
        if (waiting.isEmpty()) {
            ctx.flush();
            ctx.close(promise);
            return;
        }
        ctx.flush();
        deferredClose = promise;
        closeBound = ctx.executor().schedule(() -> {
            if (deferredClose != null) {
                waiting.removeAndFailAll(new ClosedChannelException());
                ChannelPromise close = deferredClose;
                deferredClose = null;
                ctx.close(close);
            }
        }, endpoint.closeWaitNanos(), TimeUnit.NANOSECONDS);
    }

    // ---------------------------------------------------------------- inbound

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof StreamSlot slot) {
            batchOpen = true;
            if (finArrived || ended) {
                slot.detach();
                if (finArrived) {
                    throw new ProtocolException("stream data after STREAM_FIN on " + ctx.channel());
                }
                return;
            }
            slot.attach(this);
            inbound.add(slot);
            drain();
        } else if (msg instanceof AmFrame frame && frame.amId() == AmIds.STREAM_CREDIT) {
            try {
                onCredit(frame);
            } finally {
                frame.release();
            }
        } else if (msg instanceof AmFrame frame && frame.amId() == AmIds.STREAM_FIN_ACK) {
            try {
                onFinAck(frame);
            } finally {
                frame.release();
            }
        } else if (msg instanceof AmFrame frame && frame.amId() == AmIds.STREAM_FIN) {
            try {
                if (frame.header().isReadable() || frame.payload().isReadable()) {
                    throw new ProtocolException("STREAM_FIN with " + frame.header().readableBytes() + " header and "
                            + frame.payload().readableBytes() + " payload bytes (expected none)");
                }
                if (finArrived) {
                    throw new ProtocolException("second STREAM_FIN on " + ctx.channel());
                }
                finArrived = true;
                batchOpen = true;
                inbound.add(FIN);
                drain();
            } finally {
                frame.release();
            }
        } else {
            ctx.fireChannelRead(msg);
        }
    }

    /**
     * A whole stream write that arrived as a short frame (STREAM_ONLY), its bytes still where the transport read them:
     * copied behind those of the short writes before it in this read batch, into one buffer, delivered when the batch
     * ends (or when something behind it arrives), as a socket's read returns what arrived since the last one: a stream
     * keeps its bytes' order, not its writes' bounds. Its place in the stream is where a slot would have been, since
     * slots too reach this codec as their frames arrive. Called by the carrying codec, in a lane's read batch.
     */
    public void shortWriteArrived(ShortPayload payload) {
        if (finArrived || ended) {
            if (finArrived) {
                throw new ProtocolException("stream data after STREAM_FIN on " + ctx.channel());
            }
            return;
        }
        batchOpen = true;
        StreamSlot g = gathering;
        if (g != null && inbound.peekLast() == g && g.append(payload)) {
            return;
        }
        int n = payload.length();
        ByteBuf chunk = spareBuffer;
        spareBuffer = null;
        if (chunk == null || chunk.capacity() < n) {
            if (chunk != null) {
                chunk.release();
            }
            chunk = ctx.alloc().buffer(Math.max(n, GATHER_FIRST), Math.max(n, GATHER_MOST));
        }
        try {
            payload.copyTo(chunk, 0);
        } catch (RuntimeException | Error e) {
            chunk.release();
            throw e;
        }
        chunk.writerIndex(n);
        gathering = g = StreamSlot.gathering(spareSlot, chunk);
        spareSlot = null;
        g.attach(this);
        inbound.add(g);
    }

    private void onCredit(AmFrame frame) {
        long bytes = creditOf(frame, "STREAM_CREDIT");
        if (bytes == 0) {
            throw new ProtocolException("STREAM_CREDIT of 0 bytes");
        }
        credit += bytes;
        sendWaiting();
        checkAllDelivered();
    }

    private void onFinAck(AmFrame frame) {
        long bytes = creditOf(frame, "STREAM_FIN_ACK");
        if (!finSent || finAcked) {
            throw new ProtocolException((finAcked ? "second STREAM_FIN_ACK" : "STREAM_FIN_ACK before any STREAM_FIN")
                    + " on " + ctx.channel());
        }
        finAcked = true;
        credit += bytes;
        checkAllDelivered();
    }

    /** A credit header's {@code bytes:u64}, checked against what is unconfirmed. */
    private long creditOf(AmFrame frame, String what) {
        ByteBuf h = frame.header();
        if (h.readableBytes() != CREDIT_LENGTH) {
            throw new ProtocolException(what + " header is " + h.readableBytes() + " bytes, expected " + CREDIT_LENGTH);
        }
        long bytes = h.getLongLE(h.readerIndex());
        if (bytes < 0 || credit + bytes > WINDOW) {
            throw new ProtocolException(what + " of " + bytes + " bytes, but " + (WINDOW - credit)
                    + " are unconfirmed");
        }
        return bytes;
    }

    private boolean peerHasAll() {
        return credit == WINDOW && (!finSent || finAcked);
    }

    private void checkAllDelivered() {
        if (allDelivered != null && peerHasAll()) {
            allDelivered.trySuccess(null);
        }
    }

    @Override
    public boolean readCompletePending() {
        return batchOpen;
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        if (gathering != null) {
            gathering = null;
            drain(); // in the batch still: the readComplete below is the one
        }
        batchOpen = false;
        ctx.fireChannelReadComplete();
    }

    @Override
    public void read(ChannelHandlerContext ctx) {
        demand = true;
        drain();
        ctx.read();
    }

    /**
     * Withdraws a {@code read()} not yet served (its reader turned auto-read off, as a socket channel clears its
     * pending read): nothing more is delivered until the next {@code read()}. On the endpoint's loop.
     */
    public void clearReadDemand() {
        demand = false;
    }

    /** A slot completed (its last byte arrived, maybe outside any read batch): deliver what is now in order. */
    void slotDone() {
        drain();
    }

    /**
     * Delivers the writes that are whole and in order, one batch per {@code read()} (all of them with auto-read on),
     * then gives credit back.
     */
    private void drain() {
        if (draining || ended) {
            return;
        }
        draining = true;
        try {
            boolean autoRead = ctx.channel().config().isAutoRead();
            while ((autoRead || demand) && deliverable()) {
                if (!autoRead) {
                    demand = false; // a read() during the batch asks for the next one
                }
                for (Object head; deliverable() && (head = inbound.poll()) != null; ) {
                    if (head == FIN) {
                        dropSpare(); // nothing follows the end
                        acknowledgeEnd();
                        ctx.fireUserEventTriggered(ChannelInputShutdownEvent.INSTANCE);
                        continue;
                    }
                    if (head == gathering) {
                        gathering = null;
                    }
                    StreamSlot slot = (StreamSlot) head;
                    ByteBuf data = slot.take();
                    if (data != null) {
                        unreported += data.readableBytes();
                        if (slot.gathers()) {
                            deliverGathered(slot, data);
                        } else {
                            ctx.fireChannelRead(data);
                        }
                    }
                    if (ended) {
                        return;
                    }
                }
                if (!batchOpen) {
                    ctx.fireChannelReadComplete(); // outside a lane's batch (a read(), an RMA read completing)
                }
                autoRead = ctx.channel().config().isAutoRead();
            }
        } finally {
            draining = false;
        }
        reportCredit();
    }

    /**
     * Delivers a gathering slot's bytes and keeps the slot, and the buffer if the reader let it go, for the next
     * gathering: a reference of ours taken before the read tells (Netty's cumulators look at the same count before
     * they write into a buffer they were given). A reader releases what it was given once, as any handler must: one
     * that released it twice (our reference took the second release, where a socket's buffer would have thrown in
     * the reader) is named in the log, the stream going on; had the freed buffer already come back from the pool
     * before the count is read, nothing could tell.
     */
    private void deliverGathered(StreamSlot slot, ByteBuf data) {
        spareSlot = slot;
        data.retain();
        try {
            ctx.fireChannelRead(data);
        } finally {
            int left = data.refCnt();
            if (left == 0) {
                LOG.warn("a reader of {}'s stream released a buffer it was given more than once", ctx.channel());
            } else if (left == 1 && spareBuffer == null && !ended && data.capacity() <= SPARE_MOST) {
                spareBuffer = data.clear();
            } else {
                data.release();
            }
        }
    }

    private void dropSpare() {
        spareSlot = null;
        if (spareBuffer != null) {
            spareBuffer.release();
            spareBuffer = null;
        }
    }

    private boolean deliverable() {
        Object head = inbound.peek();
        return head == FIN || (head instanceof StreamSlot s && s.isDone());
    }

    /** Gives delivered bytes back to the sender once a quarter window piled up. */
    private void reportCredit() {
        if (unreported >= WINDOW / 4) {
            sendCredit(AmIds.STREAM_CREDIT);
        }
    }

    /** The end was delivered: the sender hears it, with the rest of its credit (STREAM_FIN_ACK). */
    private void acknowledgeEnd() {
        sendCredit(AmIds.STREAM_FIN_ACK);
    }

    private void sendCredit(int amId) {
        if (ended || !ctx.channel().isOpen()) {
            return;
        }
        ByteBuf h = ctx.alloc().buffer(CREDIT_LENGTH).writeLongLE(unreported);
        unreported = 0;
        ctx.writeAndFlush(AmFrame.of(amId, h), ProtocolCodec.quietPromise(ctx));
    }

    // ---------------------------------------------------------------- the end of the endpoint

    /**
     * A graceful close waits until the peer has delivered every byte this side sent (all credit back) and its end, if
     * one went.
     */
    @Override
    public void collectOutstanding(List<Future<?>> out) {
        if (!peerHasAll()) {
            if (allDelivered == null) {
                allDelivered = ctx.executor().newPromise();
            }
            out.add(allDelivered);
        }
    }

    @Override
    public void endpointEnded(Throwable cause) {
        if (ended) {
            return;
        }
        ended = true;
        if (closeBound != null) {
            closeBound.cancel(false);
        }
        if (waiting != null) {
            waiting.removeAndFailAll(cause);
        }
        if (deferredClose != null) {
            ChannelPromise close = deferredClose;
            deferredClose = null;
            ctx.channel().closeFuture().addListener(f -> close.trySuccess());
        }
        if (allDelivered != null) {
            allDelivered.trySuccess(null);
        }
        releaseInbound();
    }

    private void releaseInbound() {
        gathering = null;
        dropSpare();
        for (Object o; (o = inbound.poll()) != null; ) {
            if (o instanceof StreamSlot s) {
                s.detach();
            }
        }
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        ended = true;
        if (waiting != null && !waiting.isEmpty()) {
            waiting.removeAndFailAll(new ClosedChannelException());
        }
        releaseInbound();
    }

    /**
     * Whether a write of {@code bytes} would go at once rather than wait for credit: a channel over this stream
     * (NucxChannel) keeps its writes in its own outbound buffer until then, as a socket channel does while the
     * kernel's buffer is full, and tries again when a read batch ends (credit comes in read batches).
     */
    public boolean accepts(int bytes) {
        return !ended && !outputEnded && waiting.isEmpty() && (bytes == 0 || credit >= Math.min(bytes, WINDOW / 2));
    }

    /**
     * Whether a write of {@code bytes} (one or more) may go now by the endpoint's short route, past this codec's
     * {@link #write}: exactly when {@code write} would send it at once rather than keep it waiting for credit.
     */
    public boolean takesNow(int bytes) {
        return bytes > 0 && accepts(bytes);
    }

    /** {@code bytes} the short route sent ({@link #takesNow}): spent from the credit as {@link #write} spends them. */
    public void sentPast(int bytes) {
        credit -= bytes;
        bytesSent += bytes;
    }

    /** Whether the stream's end was written (by a shutdown, or by the endpoint's close): no byte may follow. */
    public boolean outputEnded() {
        return outputEnded;
    }

    /** Writes waiting for credit; for tests and diagnostics. */
    public int waitingWrites() {
        return waiting == null ? 0 : waiting.size();
    }

    /** Credit left: bytes that may still be sent before the receiver reads. */
    public long credit() {
        return credit;
    }

    /** Writes arrived and not yet delivered (complete or not); for tests and diagnostics. */
    public int undelivered() {
        int n = 0;
        for (Object o : inbound) {
            if (o != FIN) {
                n++;
            }
        }
        return n;
    }

    @Override
    public void describeRequests(List<String> out) {
        Object head = inbound.peek();
        out.add("stream: " + waitingWrites() + " writes waiting for credit (" + credit + " left), " + undelivered()
                + " arrived and not delivered (the first " + (head == null ? "none" : head == FIN ? "the end"
                : ((StreamSlot) head).isDone() ? "complete" : "still arriving") + "), read "
                + (demand ? "asked" : "not asked") + ", " + unreported + " bytes delivered and not yet credited");
    }
}
