package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.util.concurrent.Future;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.EndpointServices;
import io.nucx.protocol.ProtocolCodec;
import io.nucx.protocol.WorkerProtocols;
import io.nucx.protocol.am.AmData;
import io.nucx.protocol.stream.StreamCodec;
import io.nucx.protocol.stream.StreamData;
import io.nucx.transport.AmFrame;
import io.nucx.transport.ShortPayload;

import java.util.List;

/**
 * The tag eager family's codec on one endpoint (UCX's {@code tag/eager_*.c}): outbound, a {@link TagMessage} (or a
 * plain {@code ByteBuf}, sent with the endpoint's {@code SEND_TAG}) becomes eager frames or, when the table says
 * rendezvous, a {@link RndvSendRequest} for the codec below ({@link EagerSender}); inbound, eager frames become
 * messages for posted receives, the unexpected queue or the pipeline ({@link EagerReceiver}). It carries stream writes
 * ({@code StreamData}) and active messages ({@code AmData}) the same way under their own ids, for the stream and
 * active-message codecs above. It owns the endpoint's synchronous and zero-copy sends waiting for their
 * acknowledgements and its messages still arriving.
 */
public final class EagerCodec extends ChannelDuplexHandler implements ProtocolCodec {

    /** Its name in an endpoint's pipeline. */
    public static final String NAME = "nucx.tag.eager";

    /** The active messages it handles. */
    static final int[] AM_IDS = {AmIds.EAGER_ONLY, AmIds.EAGER_FIRST, AmIds.EAGER_MIDDLE, AmIds.EAGER_SYNC_ONLY,
        AmIds.EAGER_SYNC_FIRST, AmIds.EAGER_SYNC_ACK, AmIds.EAGER_ZCOPY_ONLY, AmIds.EAGER_ZCOPY_FIRST,
        AmIds.EAGER_ZCOPY_ACK, AmIds.STREAM_ONLY, AmIds.STREAM_FIRST, AmIds.STREAM_ZCOPY_ONLY,
        AmIds.STREAM_ZCOPY_FIRST, AmIds.AM_ONLY, AmIds.AM_FIRST, AmIds.AM_ZCOPY_ONLY, AmIds.AM_ZCOPY_FIRST};

    private static final boolean[] OWNED = new boolean[256];

    static {
        for (int id : AM_IDS) {
            OWNED[id] = true;
        }
    }

    private final EndpointServices endpoint;
    private final WorkerProtocols worker;
    private final EagerSender sender;
    private EagerReceiver receiver;
    private ChannelHandlerContext ctx;
    /** See {@link #stream()}; null until a short stream write arrives. */
    private StreamCodec stream;

    public EagerCodec(EndpointServices endpoint, WorkerProtocols worker) {
        this.endpoint = endpoint;
        this.worker = worker;
        this.sender = new EagerSender(endpoint, worker.selectionCache(endpoint.endpointConfig(),
                endpoint.locality()), worker::nextMessageId, endpoint::sendTag, worker.counters());
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        this.ctx = ctx;
        receiver = new EagerReceiver(ctx, endpoint, worker.matcher(), worker.alloc(),
                worker.settings().maxMessageSize(), sender);
    }

    /**
     * A tagged message or plain buffer sent at once when it is an eager short message the AM lane's transport takes
     * now: true, and the message is gone; false leaves it to an ordinary write (see {@code EagerSender}). For an
     * endpoint's {@code write(msg)} without a promise, so that such a send needs none.
     */
    public boolean writeShortNow(ChannelHandlerContext ctx, Object msg) {
        return sender.writeShortNow(ctx, msg);
    }

    /**
     * {@code data}'s readable bytes sent at once with {@code tag} when they are an eager short message the AM lane's
     * transport takes now: true. {@code data} stays the caller's either way, untouched (UCT's {@code am_short} copies).
     */
    public boolean sendShortNow(ChannelHandlerContext ctx, long tag, ByteBuf data) {
        return sender.sendShortNow(ctx, tag, data);
    }

    /**
     * A stream write's readable bytes sent at once as a STREAM_ONLY short record when the engine picks eager short for
     * them ({@code STREAM_SEND}) and the AM lane's transport takes them now: true. {@code data} stays the caller's,
     * untouched; the stream's credit is {@code StreamCodec}'s to take.
     */
    public boolean sendStreamShortNow(ChannelHandlerContext ctx, ByteBuf data) {
        return sender.sendStreamShortNow(ctx, data);
    }

    /**
     * An active message (its first frame's {@code tagField}, user {@code header}, {@code data}) sent at once when it
     * is an eager short message the AM lane's transport takes now: true. Both buffers stay the caller's, untouched.
     */
    public boolean sendAmShortNow(ChannelHandlerContext ctx, long tagField, ByteBuf header, ByteBuf data) {
        return sender.sendAmShortNow(ctx, tagField, header, data);
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        if (msg instanceof TagMessage || msg instanceof ByteBuf || msg instanceof StreamData || msg instanceof AmData) {
            sender.write(ctx, msg, promise);
        } else {
            ctx.write(msg, promise);
        }
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof AmFrame frame && OWNED[frame.amId()]) {
            receiver.onFrame(frame);
        } else {
            ctx.fireChannelRead(msg);
        }
    }

    @Override
    public boolean takesShortFrames(int amId) {
        return receiver != null && (amId == AmIds.EAGER_ONLY || amId == AmIds.AM_ONLY
                || (amId == AmIds.STREAM_ONLY && stream() != null));
    }

    @Override
    public void shortFrameArrived(int amId, long header, ShortPayload payload) {
        // Each one's header is its tag field alone (a stream write's: 0).
        if (amId == AmIds.EAGER_ONLY) {
            receiver.onOnly(header, payload);
        } else if (amId == AmIds.AM_ONLY) {
            receiver.onAmOnly(header, payload);
        } else {
            stream.shortWriteArrived(payload);
        }
    }

    /**
     * The endpoint's stream codec, where a short stream write's bytes go straight from the transport (the codecs
     * between pass a stream's slots on untouched, at once); looked up at the first, since it is added after this one.
     */
    private StreamCodec stream() {
        if (stream == null && ctx != null) {
            stream = ctx.pipeline().get(StreamCodec.class);
        }
        return stream;
    }

    @Override
    public ByteBuf placePayload(int amId, ByteBuf header, int length) {
        return receiver == null ? null : receiver.placePayload(amId, header, length);
    }

    @Override
    public boolean frameArrived(AmFrame frame) {
        if (receiver == null) {
            return false;
        }
        receiver.onFrame(frame);
        return true;
    }

    @Override
    public void collectOutstanding(List<Future<?>> out) {
        sender.collectOutstanding(out);
    }

    @Override
    public void endpointEnded(Throwable cause) {
        sender.abort(cause);
        if (receiver != null) {
            receiver.abort(cause);
        }
    }

    /** Synchronous sends waiting for the receiver's match. */
    public int syncWaiting() {
        return sender.syncWaiting();
    }

    /** Zero-copy sends waiting for the receiver's acknowledgement of their arrival. */
    public int zcopyWaiting() {
        return sender.zcopyWaiting();
    }

    /** This endpoint's messages in the worker's unexpected queue. */
    public int unexpectedQueued() {
        return receiver == null ? 0 : receiver.queuedCount();
    }

    /** Messages of this endpoint whose fragments are still arriving. */
    public int reassemblies() {
        return receiver == null ? 0 : receiver.reassemblyCount();
    }

    @Override
    public void describeRequests(List<String> out) {
        out.add("eager: " + sender.waiting() + " sends waiting for acknowledgement, "
                + (receiver == null ? 0 : receiver.reassemblyCount()) + " messages arriving");
    }
}
