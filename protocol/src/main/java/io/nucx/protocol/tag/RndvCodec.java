package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.util.concurrent.Future;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.EndpointServices;
import io.nucx.protocol.ProtocolCodec;
import io.nucx.protocol.ProtocolException;
import io.nucx.protocol.WorkerProtocols;
import io.nucx.transport.AmFrame;

import java.util.List;

/**
 * The tag rendezvous family's codec on one endpoint (UCX's {@code rndv/*.c}): outbound, a {@link RndvSendRequest}
 * from the eager codec becomes an RTS ({@link RndvSender}); inbound, RTS, DATA and ATP go to the receive side
 * ({@link RndvReceiver}), RTR and ATS to the send side. It owns the endpoint's rendezvous sends and receives, each in
 * its stage, and their end: aborted when the endpoint ends, except what the PUT safety rule keeps (the endpoint then
 * lingers, and the frames its lanes still bring come to {@link #lingerRead}).
 */
public final class RndvCodec extends ChannelDuplexHandler implements ProtocolCodec {

    /** Its name in an endpoint's pipeline. */
    public static final String NAME = "nucx.tag.rndv";

    /**
     * Its active messages, STREAM_RTS and AM_RTS included (a stream write's RTS: the stream takes it; an active
     * message's: its handler; never the matcher).
     */
    static final int[] AM_IDS = {AmIds.RNDV_RTS, AmIds.RNDV_ATS, AmIds.RNDV_RTR, AmIds.RNDV_DATA, AmIds.RNDV_ATP,
        AmIds.STREAM_RTS, AmIds.AM_RTS};

    private final EndpointServices endpoint;
    private final WorkerProtocols worker;
    private RndvSender sender;
    private RndvReceiver receiver;

    public RndvCodec(EndpointServices endpoint, WorkerProtocols worker) {
        this.endpoint = endpoint;
        this.worker = worker;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        sender = new RndvSender(ctx, endpoint, worker.counters(), worker.rndvInFlight());
        receiver = new RndvReceiver(ctx, endpoint, worker.matcher(), worker.alloc(),
                worker.settings().maxMessageSize(), worker.settings().scheme(), worker.counters(),
                worker.rndvInFlight(), endpoint.receiveBudget());
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        if (msg instanceof RndvSendRequest req) {
            sender.write(req, promise);
        } else {
            ctx.write(msg, promise);
        }
    }

    @Override
    public ByteBuf placePayload(int amId, ByteBuf header, int length) {
        return amId == AmIds.RNDV_DATA && receiver != null ? receiver.placePayload(header, length) : null;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof AmFrame frame) || !owns(frame.amId())) {
            ctx.fireChannelRead(msg);
            return;
        }
        onFrame(frame);
    }

    @Override
    public boolean frameArrived(AmFrame frame) {
        if (receiver == null) {
            return false;
        }
        onFrame(frame);
        return true;
    }

    /** One of this family's frames, owned. */
    private void onFrame(AmFrame frame) {
        try {
            ByteBuf h = frame.header();
            int at = h.readerIndex();
            switch (frame.amId()) {
                case AmIds.RNDV_RTS, AmIds.STREAM_RTS, AmIds.AM_RTS -> {
                    ByteBuf key = RndvHeaders.readRtsKey(h); // first: it checks the length the fields are read from
                    MessageKind kind = frame.amId() == AmIds.RNDV_RTS ? MessageKind.TAG
                            : frame.amId() == AmIds.STREAM_RTS ? MessageKind.STREAM : MessageKind.AM;
                    receiver.onRts(h.getLongLE(at), h.getLongLE(at + 8), h.getLongLE(at + 16), key, kind,
                            frame.payload());
                }
                case AmIds.RNDV_RTR -> {
                    ByteBuf key = RndvHeaders.readRtrKey(h);
                    sender.onRtr(h.getLongLE(at), h.getLongLE(at + 8), h.getLongLE(at + 16),
                            RndvHeaders.readRtrPlacedFragment(h), key);
                }
                case AmIds.RNDV_DATA -> {
                    check(frame, RndvHeaders.DATA_LENGTH);
                    receiver.onData(h.getLongLE(at), h.getLongLE(at + 8), frame.payload().retain(),
                            (frame.flags() & RndvHeaders.DATA_FLAG_ATS) != 0);
                }
                case AmIds.RNDV_ATS -> {
                    check(frame, RndvHeaders.ATS_LENGTH);
                    sender.onAts(h.getLongLE(at), h.getByte(at + 8));
                }
                default -> {
                    check(frame, RndvHeaders.ATP_LENGTH);
                    receiver.onAtp(h.getLongLE(at), h.getByte(at + 8), h.getLongLE(at + 9));
                }
            }
        } finally {
            frame.release();
        }
    }

    private static boolean owns(int amId) {
        return amId == AmIds.RNDV_RTS || amId == AmIds.RNDV_ATS || amId == AmIds.RNDV_RTR || amId == AmIds.RNDV_DATA
                || amId == AmIds.RNDV_ATP || amId == AmIds.STREAM_RTS || amId == AmIds.AM_RTS;
    }

    private static void check(AmFrame frame, int headerLength) {
        if (frame.header().readableBytes() != headerLength) {
            throw new ProtocolException(AmIds.name(frame.amId()) + " header is " + frame.header().readableBytes()
                    + " bytes, expected " + headerLength);
        }
    }

    @Override
    public void collectOutstanding(List<Future<?>> out) {
        sender.collectOutstanding(out);
        receiver.collectOutstanding(out);
    }

    @Override
    public void endpointEnded(Throwable cause) {
        sender.abort(cause);
        receiver.abort(cause);
    }

    @Override
    public boolean lingers() {
        return sender.lingers() || receiver.lingers();
    }

    @Override
    public boolean awaitsPeerEnd() {
        return sender.announcedAtEnd();
    }

    @Override
    public void lingerRead(AmFrame frame) {
        sender.refuseLateOffer(frame);
        receiver.lingerRead(frame);
    }

    @Override
    public int park() {
        return receiver.park();
    }

    @Override
    public int heldCount() {
        return receiver.heldCount();
    }

    /** Rendezvous sends waiting for the receiver (RTR, ATS) or being written by PUT. */
    public int sendsWaiting() {
        return sender.waiting();
    }

    /** Receive buffers offered to the peer for PUT, held ones included. */
    public int offered() {
        return receiver.offered();
    }

    /** Receives that closing workers of this JVM parked: never completed, their buffers never released. */
    public static int parkedCount() {
        return RndvReceiver.parkedCount();
    }

    @Override
    public void describeRequests(List<String> out) {
        out.add("rndv: " + sender.waiting() + " sends waiting, " + receiver.receiving() + " receives, "
                + receiver.heldCount() + " held");
    }
}
