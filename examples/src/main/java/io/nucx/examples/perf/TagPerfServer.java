package io.nucx.examples.perf;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import io.nucx.AmMessage;
import io.nucx.Endpoint;
import io.nucx.EndpointOption;
import io.nucx.Worker;
import io.nucx.protocol.am.AmData;
import io.nucx.protocol.stream.StreamData;
import io.nucx.protocol.tag.TagMessage;
import io.nucx.protocol.tag.TagReceive;

/**
 * The answering side of a tag test, on the worker's loop: one {@linkplain TagReceive#reusable reusable} receive for
 * any tag into one receive buffer (as ucx_perftest's), posted again after each message, answered by tag
 * ({@link PerfTags}); PONGs are slices of a pooled buffer sent under the endpoint's {@code SEND_TAG}, so a ping-pong
 * allocates nothing here. In am_lat / am_bw PING and DATA come as active messages to its handlers instead (rendezvous
 * ones received into a buffer), PONG goes as one; in stream_lat / stream_bw as the stream's bytes
 * ({@link PerfStreamReader}), PONG as a stream write. Completes when FINISH arrives;
 * it counts what its loop thread allocated per message from the client's MEASURE on.
 */
final class TagPerfServer {

    private final Worker worker;
    private final Endpoint ep;
    private final ByteBuf reply;
    private final Promise<Long> done;
    private final boolean sync;
    private final boolean am;
    /** Null unless the client asked for fresh data: the reply is written before each PONG. */
    private final FreshData fresh;
    /** The receive buffer, as ucx_perftest's: every message goes into it (large ones straight from the lane). */
    private final ByteBuf into;
    private final TagReceive any;
    private final PerfStreamReader stream;
    private long received;
    private long measured;
    private long allocStart = -1;
    private double allocPerMessage = -1;

    TagPerfServer(Worker worker, Endpoint ep, int maxSize, boolean sync) {
        this(worker, ep, maxSize, sync, false);
    }

    /** @param am am_lat / am_bw: PING and DATA come as active messages, PONG goes as one */
    TagPerfServer(Worker worker, Endpoint ep, int maxSize, boolean sync, boolean am) {
        this(worker, ep, maxSize, sync, am, false);
    }

    /** @param fresh each PONG's bytes written before it goes ({@link FreshData}) */
    TagPerfServer(Worker worker, Endpoint ep, int maxSize, boolean sync, boolean am, boolean fresh) {
        this(worker, ep, maxSize, sync, am, fresh, null);
    }

    /**
     * @param stream stream_lat / stream_bw: PING and DATA come as the stream's bytes through this reader, PONG goes as
     *               a stream write of the same size; null for the other tests
     */
    TagPerfServer(Worker worker, Endpoint ep, int maxSize, boolean sync, boolean am, boolean fresh,
                  PerfStreamReader stream) {
        this.stream = stream;
        this.fresh = fresh ? new FreshData() : null;
        this.sync = sync;
        this.am = am;
        this.worker = worker;
        this.ep = ep;
        this.reply = PooledByteBufAllocator.DEFAULT.directBuffer(maxSize, maxSize).writeZero(maxSize);
        this.into = PooledByteBufAllocator.DEFAULT.directBuffer(maxSize, maxSize);
        this.any = TagReceive.reusable(0, 0, into, new TagReceive.Handler() {
            @Override
            public void received(long tag, ByteBuf data) {
                int size = data.readableBytes();
                data.release();
                onMessage(tag, size);
            }

            @Override
            public void receivedInto(long tag, ByteBuf buffer, int index, int length) {
                buffer.clear(); // the next message goes to the start again, as ucx_perftest's receive buffer
                onMessage(tag, length);
            }

            @Override
            public void failed(Throwable cause) {
                done.tryFailure(cause);
            }
        });
        this.done = worker.eventLoop().newPromise();
        ep.config().setOption(EndpointOption.SEND_TAG, PerfTags.PONG);
    }

    /** Completes with the number of DATA messages received when the client says FINISH. */
    Future<Long> start() {
        if (stream != null) {
            stream.onMessage(this::onStream);
        }
        if (am) {
            worker.setAmHandler(PerfTags.AM_PING, m -> receive(m, PerfTags.PING));
            worker.setAmHandler(PerfTags.AM_DATA, m -> receive(m, PerfTags.DATA));
            done.addListener(f -> {
                worker.setAmHandler(PerfTags.AM_PING, null);
                worker.setAmHandler(PerfTags.AM_DATA, null);
            });
        }
        worker.eventLoop().execute(this::post);
        // A client that dies mid-run never sends FINISH: end with its endpoint's failure, not after the run timeout.
        ep.errorFuture().addListener(f -> {
            if (!f.isSuccess()) {
                done.tryFailure(f.cause());
            }
        });
        done.addListener(f -> { // a receive still going holds a slice of its own
            reply.release();
            into.release();
        });
        return done;
    }

    /** Bytes the loop allocated per message from MEASURE to FINISH; -1 without a MEASURE. */
    double allocationPerMessage() {
        return allocPerMessage;
    }

    /**
     * Posts {@link #any}. Posted from its own handler, it is matched when the handler returns
     * ({@link Worker#tagRecv(TagReceive)}), so a backlog of waiting messages is taken in a loop.
     */
    private void post() {
        worker.tagRecv(any);
    }

    /**
     * An active message of am_lat / am_bw, handled as the tagged message {@code as}: eager data are here already; a
     * rendezvous message's are received into the receive buffer, as ucx_perftest's {@code ucp_am_recv_data_nbx} into
     * its one buffer (several may be arriving at once, each over the same bytes). A pooled buffer per message was a
     * new pool chunk per message from 4 MiB (Netty's chunk size): memory the kernel faulted in, page by page, at
     * every message, a quarter of the copy rate.
     */
    private void receive(AmMessage m, long as) {
        int size = (int) m.dataLength();
        if (!m.isRendezvous()) {
            onAm(as, size);
            return;
        }
        ByteBuf target = into.retainedSlice(0, size).clear();
        m.receiveData(target).addListener(f -> {
            target.release();
            if (f.isSuccess()) {
                onAm(as, size);
            } else {
                done.tryFailure(f.cause());
            }
        });
    }

    /** A message's worth of the stream: stream_lat's PING, answered by as many bytes, or a DATA of stream_bw. */
    private void onStream() {
        measured++;
        if (!stream.pingPong()) {
            received++;
            return;
        }
        int size = stream.messageSize();
        if (fresh != null) {
            fresh.write(reply, 0, size);
        }
        if (ep.trySendStreamShort(reply.setIndex(0, size))) {
            ep.flush(); // copied into the transport, the reply buffer still ours
        } else {
            ep.writeAndFlush(new StreamData(reply.retainedSlice(0, size)), ep.voidPromise());
        }
    }

    private void onAm(long as, int size) {
        measured++;
        if (as == PerfTags.PING) {
            if (fresh != null) {
                fresh.write(reply, 0, size);
            }
            if (ep.tryAmSendShort(PerfTags.AM_PONG, Unpooled.EMPTY_BUFFER, reply.setIndex(0, size), false)) {
                ep.flush(); // copied into the transport, the reply buffer still ours
            } else {
                ep.writeAndFlush(new AmData(PerfTags.AM_PONG, Unpooled.EMPTY_BUFFER, reply.retainedSlice(0, size),
                        false), ep.voidPromise());
            }
        } else {
            received++;
        }
    }

    private void onMessage(long tag, int size) {
        measured++;
        if (tag == PerfTags.PING) {
            if (fresh != null) {
                fresh.write(reply, 0, size);
            }
            if (sync) {
                ep.writeAndFlush(new TagMessage(PerfTags.PONG, reply.retainedSlice(0, size), true), ep.voidPromise());
            } else if (ep.trySendShort(PerfTags.PONG, reply.setIndex(0, size))) {
                ep.flush(); // copied into the transport, the reply buffer still ours
            } else {
                ep.writeAndFlush(reply.retainedSlice(0, size), ep.voidPromise());
            }
        } else if (tag == PerfTags.DATA) {
            received++;
        } else if (tag == PerfTags.SYNC) {
            // Asked (a SYNC with a byte: a settling client's), the ack carries how long this process's JIT compiler has
            // run, and the client settles until it stays put; not asked (a measured run's end), no /proc is read.
            ep.writeAndFlush(new TagMessage(PerfTags.SYNC_ACK, size == 0 ? Unpooled.EMPTY_BUFFER
                    : Unpooled.buffer(Long.BYTES, Long.BYTES).writeLong(JitActivity.compilerNanos())), ep.voidPromise());
        } else if (tag == PerfTags.MEASURE) {
            measured = 0;
            allocStart = PerfAllocation.current();
        } else if (tag == PerfTags.FINISH) {
            if (allocStart >= 0 && measured > 1) {
                allocPerMessage = (PerfAllocation.current() - allocStart) / (double) (measured - 1);
            }
            done.trySuccess(received);
            return;
        } else {
            done.tryFailure(new IllegalStateException("unexpected perftest tag " + tag));
            return;
        }
        post();
    }
}
