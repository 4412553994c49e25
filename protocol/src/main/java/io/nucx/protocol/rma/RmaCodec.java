package io.nucx.protocol.rma;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import io.netty.util.concurrent.PromiseCombiner;
import io.nucx.protocol.EndpointServices;
import io.nucx.protocol.KeyBundle;
import io.nucx.protocol.ProtocolCodec;
import io.nucx.protocol.ProtocolCounters;
import io.nucx.protocol.ProtocolFamily;
import io.nucx.protocol.RmaRail;
import io.nucx.protocol.RmaTransfer;
import io.nucx.protocol.amo.RemoteMemoryKey;
import io.nucx.transport.Capability;
import io.nucx.transport.rma.InvalidRemoteKeyException;
import io.nucx.transport.rma.RemoteKey;

import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * The RMA API on one endpoint: {@link RmaRequest}s written to it. PUT and GET move the bytes with the endpoint's RMA
 * lanes (split over several rails by bandwidth, {@link RmaTransfer}) with the peer's transport key for the device
 * each lane reaches; they complete when the data are there: at the peer for a PUT (cma's system call has returned,
 * rdma's WRITE is acknowledged), here for a GET. FLUSH completes when every PUT and GET before it has (failing with
 * the first failure among them); FENCE holds what comes after it until what came before it is complete. Operations
 * written while the endpoint still wires up wait for it.
 *
 * <p>Bad requests fail their own future at once, naming what is wrong: a key another worker registered (keys are
 * worker-wide, as UCX's: unpacked on an endpoint to the owner), bytes outside the registered region, no RMA lane to
 * this peer (and why: no transport with RMA on both sides, the kernel refused cma, a lane that did not connect), a
 * key with no transport key for the devices this endpoint's lanes reach. There is no active-message emulation.
 * Loop only.
 */
public final class RmaCodec extends ChannelOutboundHandlerAdapter implements ProtocolCodec {

    /** Its name in an endpoint's pipeline. */
    public static final String NAME = "nucx.rma";
    /** Counters: operations started. */
    public static final String PUT_COUNTER = "rma/put";
    public static final String GET_COUNTER = "rma/get";

    /** The RMA family: no protocol to select and no active messages, only the codec. */
    public static final ProtocolFamily FAMILY = new ProtocolFamily("rma", List.of(), new int[0],
            (pipeline, endpoint, worker) -> {
                RmaCodec codec = new RmaCodec(endpoint, worker.alloc(), worker.counters());
                pipeline.addLast(NAME, codec);
                return codec;
            });

    /** A fence in the queue: what follows waits until nothing is running. */
    private static final Object FENCE = new Object();

    private final EndpointServices endpoint;
    private final ByteBufAllocator alloc;
    private final ProtocolCounters counters;
    /** Operations and fences waiting behind a fence or for the wireup, in order. */
    private final ArrayDeque<Object> waiting = new ArrayDeque<>();
    private final Set<Running> running = new LinkedHashSet<>();
    private ChannelHandlerContext ctx;
    private boolean waitsForWireup;
    private boolean ended;
    private final Runnable drain = this::drain;

    public RmaCodec(EndpointServices endpoint, ByteBufAllocator alloc, ProtocolCounters counters) {
        this.endpoint = endpoint;
        this.alloc = alloc;
        this.counters = counters;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        this.ctx = ctx;
        Future<Void> wired = endpoint.wireupFuture();
        if (wired != null && !wired.isDone()) {
            waitsForWireup = true;
            // a task of its own: the lanes that completed the wireup connect in the same turn
            wired.addListener(f -> ctx.executor().execute(() -> {
                waitsForWireup = false;
                drain();
            }));
        }
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        if (!(msg instanceof RmaRequest r)) {
            ctx.write(msg, promise);
            return;
        }
        r.result().addListener(f -> {
            if (f.isSuccess()) {
                promise.trySuccess();
            } else {
                promise.tryFailure(f.cause());
            }
        });
        if (ended) {
            r.result().tryFailure(new IllegalStateException(r + ": the endpoint has ended"));
            return;
        }
        switch (r.kind()) {
            case FENCE -> {
                if (!running.isEmpty() || !waiting.isEmpty() || waitsForWireup) {
                    waiting.add(FENCE);
                }
                r.result().trySuccess(null);
            }
            case FLUSH -> flush(r.result());
            case PUT, GET -> {
                String refusal = refusal(r);
                if (refusal != null) {
                    r.result().tryFailure(new IllegalArgumentException(r.kind() + ": " + refusal));
                } else if (!waiting.isEmpty() || waitsForWireup) {
                    waiting.add(r);
                } else {
                    start(r);
                }
            }
            default -> throw new IllegalStateException(r.kind().name());
        }
    }

    /** What is wrong with a PUT or GET whatever the lanes, or null. */
    private String refusal(RmaRequest r) {
        RemoteMemoryKey key = r.key();
        long n = r.local().byteSize();
        if (key.workerUuid() != endpoint.peerUuid()) {
            return "the key was registered by worker " + Long.toHexString(key.workerUuid()) + ", but this endpoint "
                    + "reaches worker " + Long.toHexString(endpoint.peerUuid()) + " (use it on an endpoint to the "
                    + "worker that registered the memory)";
        }
        if (!key.covers(r.remoteAddress(), n)) {
            return n + " bytes at 0x" + Long.toHexString(r.remoteAddress()) + " lie outside the registered region [0x"
                    + Long.toHexString(key.base()) + ", +" + key.length() + ")";
        }
        if (n > Integer.MAX_VALUE) {
            return n + " bytes in one operation (at most " + Integer.MAX_VALUE + ")";
        }
        return null;
    }

    private void flush(Promise<Void> result) {
        List<Future<?>> before = new ArrayList<>();
        for (Running op : running) {
            before.add(op.r.result());
        }
        for (Object o : waiting) {
            if (o instanceof RmaRequest r) {
                before.add(r.result());
            }
        }
        if (before.isEmpty()) {
            result.trySuccess(null);
            return;
        }
        PromiseCombiner all = new PromiseCombiner(ctx.executor());
        before.forEach(all::add);
        all.finish(result);
    }

    /** Starts what waits, up to the next fence that still has something running before it. */
    private void drain() {
        while (!waitsForWireup && !waiting.isEmpty() && !ended) {
            Object head = waiting.peek();
            if (head == FENCE) {
                if (!running.isEmpty()) {
                    return; // the last one to finish drains again
                }
                waiting.poll();
            } else {
                start((RmaRequest) waiting.poll());
            }
        }
    }

    private void start(RmaRequest r) {
        boolean put = r.kind() == RmaRequest.Kind.PUT;
        Capability cap = put ? Capability.PUT_ZCOPY : Capability.GET_ZCOPY;
        long n = r.local().byteSize();
        if (n == 0) {
            r.result().trySuccess(null);
            return;
        }
        List<RmaRail> rails = endpoint.rmaRails(cap);
        if (rails.isEmpty()) {
            r.result().tryFailure(new IllegalStateException(r.kind() + " to " + ctx.channel() + ": "
                    + endpoint.noRmaLaneReason(cap)));
            return;
        }
        List<RmaTransfer.RailKey> keys = new ArrayList<>(rails.size());
        List<KeyBundle.Key> bundle = r.key().keys();
        for (RmaRail rail : rails) {
            byte[] k = KeyBundle.keyFor(bundle, rail.remoteEntry());
            if (k == null) {
                continue;
            }
            try {
                keys.add(new RmaTransfer.RailKey(rail, rail.lane().unpackKey(Unpooled.wrappedBuffer(k))));
            } catch (InvalidRemoteKeyException e) {
                r.result().tryFailure(new IllegalArgumentException(r.kind() + ": the key's device key for "
                        + rail.name() + " is refused: " + e.getMessage(), e));
                return;
            }
        }
        if (keys.isEmpty()) {
            r.result().tryFailure(new IllegalStateException(r.kind() + ": the key carries no transport key for the "
                    + "devices this endpoint's RMA lanes reach (" + String.join(", ", rails.stream()
                    .map(RmaRail::name).toList()) + "; the key has " + (bundle.isEmpty() ? "none: the owner has no "
                    + "RMA device" : bundle.size() + " for other devices") + ")"));
            return;
        }
        RemoteKey first = keys.get(0).key();
        Running op = new Running(r, put, keys, r.remoteAddress() - first.address());
        running.add(op);
        counters.counter(put ? PUT_COUNTER : GET_COUNTER).increment();
        op.start();
    }

    /** One PUT or GET in flight: its local bytes as a buffer the transfer can use, released at the end. */
    private final class Running extends RmaTransfer {
        final RmaRequest r;
        final boolean put;
        /** For a heap segment not backed by a byte[]: a staging buffer, copied from (PUT) or into (GET) it. */
        final ByteBuf buffer;
        final boolean staged;

        Running(RmaRequest r, boolean put, List<RailKey> keys, long remoteOffset) {
            this(r, put, keys, remoteOffset, localBuffer(r.local()));
        }

        private Running(RmaRequest r, boolean put, List<RailKey> keys, long remoteOffset, ByteBuf[] local) {
            super(put, keys, local[0], 0, r.local().byteSize(), remoteOffset, alloc, ctx.executor(), counters);
            this.r = r;
            this.put = put;
            this.buffer = local[0];
            this.staged = local[1] != null;
            if (staged && put) {
                MemorySegment.copy(r.local(), 0, MemorySegment.ofBuffer(buffer.nioBuffer(0, (int) total)), 0, total);
            }
        }

        @Override
        protected void finished() {
            if (staged && !put) {
                MemorySegment.copy(MemorySegment.ofBuffer(buffer.nioBuffer(0, (int) total)), 0, r.local(), 0,
                        total);
            }
            end();
            r.result().trySuccess(null);
        }

        @Override
        protected void failed(Throwable cause) {
            end();
            r.result().tryFailure(cause);
        }

        void end() {
            running.remove(this);
            buffer.release();
            if (!waiting.isEmpty()) {
                ctx.executor().execute(drain);
            }
        }
    }

    /**
     * {@code local} as a buffer: native memory and byte[]-backed heap memory wrapped (the transfer bounces heap
     * bytes through direct chunks), any other heap segment staged in a pooled direct buffer (element [1] non-null).
     */
    private ByteBuf[] localBuffer(MemorySegment local) {
        if (local.isNative() || local.heapBase().orElse(null) instanceof byte[]) {
            return new ByteBuf[] {Unpooled.wrappedBuffer(local.asByteBuffer()).clear(), null};
        }
        int n = (int) local.byteSize();
        ByteBuf staging = alloc.directBuffer(n, n);
        return new ByteBuf[] {staging, staging};
    }

    @Override
    public void collectOutstanding(List<Future<?>> out) {
        for (Running op : running) {
            out.add(op.r.result());
        }
        for (Object o : waiting) {
            if (o instanceof RmaRequest r) {
                out.add(r.result());
            }
        }
    }

    /** The endpoint ended: running transfers stop before their next segment and fail, waiting ones fail. */
    @Override
    public void endpointEnded(Throwable cause) {
        ended = true;
        for (Running op : List.copyOf(running)) {
            op.cancel();
            op.end();
            op.r.result().tryFailure(cause);
        }
        for (Object o; (o = waiting.poll()) != null; ) {
            if (o instanceof RmaRequest r) {
                r.result().tryFailure(cause);
            }
        }
    }

    @Override
    public void describeRequests(List<String> out) {
        out.add("rma: " + running.size() + " running, " + waiting.stream().filter(o -> o != FENCE).count()
                + " waiting");
    }
}
