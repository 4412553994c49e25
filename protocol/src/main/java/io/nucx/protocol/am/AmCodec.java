package io.nucx.protocol.am;

import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.util.internal.logging.InternalLogger;
import io.netty.util.internal.logging.InternalLoggerFactory;
import io.nucx.protocol.ProtocolCodec;
import io.nucx.protocol.ProtocolFamily;
import io.nucx.protocol.WorkerProtocols;

import java.util.List;
import java.util.concurrent.atomic.LongAdder;

/**
 * Active messages on one endpoint (UCX's {@code ucp_am_send_nbx} and AM receive handlers).
 *
 * <p><b>Carried, not re-implemented</b>, as the stream is: an {@link AmData} goes down to the eager codec, which looks
 * up its protocol for the {@code AM_SEND} selection key in the same tables as tagged sends and sends it with the AM
 * first-frame ids; on arrival the carrying codec fires an {@link AmIncoming} up the pipeline, here, when an eager
 * message is whole or a rendezvous RTS has arrived. Those frames travel in order on the AM lane, so the handler sees
 * one endpoint's messages in the order they were sent.
 *
 * <p>This codec checks sends (id range, header length: {@link AmHeaders#MAX_HEADER}; a bad one fails its future and
 * nothing is sent) and hands each arrival to the worker's handler for its id ({@link WorkerProtocols#amHandlers()}),
 * on the loop. No handler (unknown id, or none registered yet): the message is dropped with a counted warning
 * ({@link #DROPPED_COUNTER}) as UCX drops it; a rendezvous sender's future fails with {@link NoAmHandlerException}.
 * The connection is not touched. A handler that throws is logged and counted; the message is still released.
 */
public final class AmCodec extends ChannelDuplexHandler implements ProtocolCodec {

    private static final InternalLogger LOG = InternalLoggerFactory.getInstance(AmCodec.class);

    /** Its name in an endpoint's pipeline. */
    public static final String NAME = "nucx.am";
    /** Counter: active messages dropped because no handler was registered for their id. */
    public static final String DROPPED_COUNTER = "am/dropped-no-handler";
    /** Counter: handler calls that threw. */
    public static final String HANDLER_FAILED_COUNTER = "am/handler-failed";

    /**
     * The active-message family: no protocol or id of its own (its messages take the tag eager and rendezvous
     * protocols, selected by {@code AM_SEND}, under the AM_* ids those codecs own). Its codec sits at the tail side of
     * the eager codec.
     */
    public static final ProtocolFamily FAMILY = new ProtocolFamily("am", List.of(), new int[0],
            (pipeline, endpoint, worker) -> {
                AmCodec codec = new AmCodec(worker);
                pipeline.addLast(NAME, codec);
                return codec;
            });

    private final AmHandlerTable handlers;
    private final LongAdder dropped;
    private final LongAdder handlerFailed;

    public AmCodec(WorkerProtocols worker) {
        this.handlers = worker.amHandlers();
        this.dropped = worker.counters().counter(DROPPED_COUNTER);
        this.handlerFailed = worker.counters().counter(HANDLER_FAILED_COUNTER);
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        if (msg instanceof AmData d) {
            String bad = refusal(d.id(), d.header().readableBytes());
            if (bad != null) {
                d.release();
                promise.tryFailure(new AmSendRefusedException(bad));
                return;
            }
        }
        ctx.write(msg, promise);
    }

    /** Why an active message of {@code id} with a header of {@code headerLength} bytes cannot go; null: it can. */
    public static String refusal(int id, int headerLength) {
        return id < 0 || id > AmHeaders.MAX_ID
                ? "active message id " + id + " is outside 0 to " + AmHeaders.MAX_ID
                : headerLength > AmHeaders.MAX_HEADER
                ? "active message header of " + headerLength + " bytes is over the limit of "
                        + AmHeaders.MAX_HEADER + " bytes (AmHeaders.MAX_HEADER); send the rest as data"
                : null;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof AmIncoming m)) {
            ctx.fireChannelRead(msg);
            return;
        }
        AmHandlerTable.Receiver h = handlers.get(m.id());
        if (h == null) {
            dropped.increment();
            long n = dropped.sum();
            if (Long.bitCount(n) == 1) { // 1st, 2nd, 4th...: a stream of them does not flood the log
                LOG.warn("{}: dropped {} (no handler for active message id {}); {} dropped so far on this worker",
                        ctx.channel(), m, m.id(), n);
            }
            m.refuse();
            return;
        }
        try {
            h.onMessage(m, ctx.channel());
        } catch (Throwable t) {
            handlerFailed.increment();
            LOG.warn("{}: the handler of active message id {} threw", ctx.channel(), m.id(), t);
        } finally {
            if (!m.isKept()) {
                m.release();
            }
        }
    }

    @Override
    public void endpointEnded(Throwable cause) {
        // Nothing of its own: arrivals still going belong to the carrying codecs, which end them.
    }
}
