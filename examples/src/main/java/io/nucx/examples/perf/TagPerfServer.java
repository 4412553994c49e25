package io.nucx.examples.perf;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.GenericFutureListener;
import io.netty.util.concurrent.Promise;
import io.nucx.Endpoint;
import io.nucx.Worker;
import io.nucx.protocol.tag.TagMessage;

/**
 * The answering side of a tag test, on the worker's loop: one receive posted at a time for any tag, answered by tag
 * ({@link PerfTags}). Completes when FINISH arrives.
 */
final class TagPerfServer {

    private final Worker worker;
    private final Endpoint ep;
    private final ByteBuf reply;
    private final ByteBuf owned;
    private final Promise<Long> done;
    private final boolean sync;
    private final GenericFutureListener<Future<TagMessage>> onMessage = this::onMessage;
    private long received;

    TagPerfServer(Worker worker, Endpoint ep, int maxSize, boolean sync) {
        this.sync = sync;
        this.worker = worker;
        this.ep = ep;
        this.owned = Unpooled.directBuffer(maxSize).writeZero(maxSize);
        this.reply = Unpooled.unreleasableBuffer(owned);
        this.done = worker.eventLoop().newPromise();
    }

    /** Completes with the number of DATA messages received when the client says FINISH. */
    Future<Long> start() {
        worker.eventLoop().execute(this::post);
        // A client that dies mid-run never sends FINISH: end with its endpoint's failure, not after the run timeout.
        ep.errorFuture().addListener(f -> {
            if (!f.isSuccess()) {
                done.tryFailure(f.cause());
            }
        });
        done.addListener(f -> owned.release());
        return done;
    }

    private void post() {
        worker.tagRecv(0, 0, null).addListener(onMessage);
    }

    private void onMessage(Future<TagMessage> f) {
        if (!f.isSuccess()) {
            done.tryFailure(f.cause());
            return;
        }
        TagMessage m = f.getNow();
        long tag = m.tag();
        int size = m.content().readableBytes();
        m.release();
        if (tag == PerfTags.PING) {
            ep.writeAndFlush(new TagMessage(PerfTags.PONG, reply.retainedSlice(0, size), sync), ep.voidPromise());
        } else if (tag == PerfTags.DATA) {
            received++;
        } else if (tag == PerfTags.SYNC) {
            ep.writeAndFlush(new TagMessage(PerfTags.SYNC_ACK, Unpooled.EMPTY_BUFFER), ep.voidPromise());
        } else if (tag == PerfTags.FINISH) {
            done.trySuccess(received);
            return;
        } else {
            done.tryFailure(new IllegalStateException("unexpected perftest tag " + tag));
            return;
        }
        post();
    }
}
