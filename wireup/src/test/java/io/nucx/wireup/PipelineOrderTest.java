package io.nucx.wireup;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.util.ReferenceCountUtil;
import io.nucx.Endpoint;
import io.nucx.EndpointOption;
import io.nucx.Worker;
import io.nucx.protocol.select.ProtoTable;
import io.nucx.protocol.select.SelectionKey;
import io.nucx.protocol.tag.TagMessage;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import static io.nucx.wireup.TestWorkers.assertPattern;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Messages come up an endpoint's pipeline in the order the peer wrote them, whatever protocol carried each: a stream
 * codec above (length fields, HTTP) depends on it. The sender writes small and large messages interleaved (the
 * pattern that used to arrive in completion order: {@code [4, 16, 4, 4 MiB, 4, 16, 4, 700000, ...]}) with sizes on
 * both sides of every boundary of its protocol table, from heap and from direct memory; the receiver's handler must
 * see them in write order, each intact. Over every transport, and over shm with cma (rendezvous by GET and by PUT).
 */
@Timeout(180)
class PipelineOrderTest {

    @RegisterExtension
    final TestWorkers workers = new TestWorkers();

    /** Collects what comes up an endpoint's pipeline; counts non-tagged messages as errors. */
    private static final class Collector extends ChannelInboundHandlerAdapter {
        final LinkedBlockingQueue<Object> arrived = new LinkedBlockingQueue<>();

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            arrived.add(msg);
        }
    }

    @ParameterizedTest(name = "{0} {1}")
    @CsvSource({
        "tcp, TCP_CONNECT=iface",
        "tcp, TCP_CONNECT=p2p",
        "self, -",
        "shm, -",
        "'shm,cma', RNDV_SCHEME=get_zcopy;SHM_COPY_BW=1g",
        "'shm,cma', RNDV_SCHEME=put_zcopy;SHM_COPY_BW=1g",
    })
    void messagesComeUpThePipelineInWriteOrder(String tls, String setting) throws Exception {
        String[] settings = TestWorkers.settings(tls, setting);
        Map<Endpoint, Collector> collectors = new ConcurrentHashMap<>();
        ChannelInitializer<Endpoint> init = new ChannelInitializer<>() {
            @Override
            protected void initChannel(Endpoint ep) {
                ep.config().setOption(EndpointOption.PIPELINE_TAG_MASK, 0L); // every tag comes up the pipeline
                Collector c = new Collector();
                collectors.put(ep, c);
                ep.pipeline().addLast(c);
            }
        };
        DefaultWorker a = workers.start("a", settings);
        DefaultWorker b = workers.start("b", init, settings);
        List<Integer> sizes = interleaved(boundaries(a, b));
        Endpoint ab = a.connect(b.address());
        List<ChannelFuture> sends = new ArrayList<>();
        for (int i = 0; i < sizes.size(); i++) {
            ByteBuf data = content(i, sizes.get(i), i % 2 == 1);
            sends.add(ab.tagSend(i, data));
        }
        for (ChannelFuture f : sends) {
            assertTrue(f.await(60, TimeUnit.SECONDS) && f.isSuccess(), () -> "send: " + f.cause());
        }
        Collector c = awaitCollector(b, collectors);
        for (int i = 0; i < sizes.size(); i++) {
            Object m = c.arrived.poll(60, TimeUnit.SECONDS);
            assertNotNull(m, "message " + i + " of " + sizes.size() + " did not come up the pipeline");
            try {
                TagMessage t = (TagMessage) m;
                int expected = i;
                assertEquals(i, t.tag(), () -> "message " + expected + " (" + sizes.get(expected) + " B) came up "
                        + "out of order: " + t + "; sizes written " + sizes);
                assertPattern(i, sizes.get(i), t.content());
            } finally {
                ReferenceCountUtil.release(m);
            }
        }
        assertTrue(c.arrived.isEmpty(), () -> "more came up than was written: " + c.arrived);
        // The sizes did cross protocols: eager and rendezvous both carried messages.
        Map<String, Long> used = a.counters().snapshot();
        long eager = used.entrySet().stream().filter(e -> e.getKey().startsWith("egr/")).mapToLong(Map.Entry::getValue)
                .sum();
        assertTrue(eager > 0 && used.getOrDefault("tag/rndv", 0L) + used.getOrDefault("rndv/get/zcopy", 0L) > 0,
                used::toString);
        if (setting.startsWith("RNDV_SCHEME")) {
            String recv = setting.contains("get_zcopy") ? "recv:rndv/get/zcopy" : "recv:rndv/put/zcopy";
            assertTrue(b.counters().count(recv) > 0, () -> recv + ": " + b.counters().snapshot());
        }
    }

    /**
     * Both directions pass through the pipeline: a user's outbound handler at the tail sees each write on its way down
     * (and may change it: here it re-tags), and the peer's inbound handler sees the message come up.
     */
    @ParameterizedTest(name = "{0}")
    @CsvSource({"tcp, -", "shm, -"})
    void userHandlersSeeWritesGoDownAndMessagesComeUp(String tls, String unused) throws Exception {
        List<Object> seenGoingDown = new CopyOnWriteArrayList<>();
        ChannelInitializer<Endpoint> sender = new ChannelInitializer<>() {
            @Override
            protected void initChannel(Endpoint ep) {
                ep.pipeline().addLast(new ChannelOutboundHandlerAdapter() {
                    @Override
                    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise p) {
                        seenGoingDown.add(msg.toString());
                        TagMessage m = (TagMessage) msg;
                        ctx.write(new TagMessage(m.tag() + 100, m.content()), p);
                    }
                });
            }
        };
        Map<Endpoint, Collector> collectors = new ConcurrentHashMap<>();
        ChannelInitializer<Endpoint> receiver = new ChannelInitializer<>() {
            @Override
            protected void initChannel(Endpoint ep) {
                ep.config().setOption(EndpointOption.PIPELINE_TAG, 100L);
                ep.config().setOption(EndpointOption.PIPELINE_TAG_MASK, -1L);
                Collector c = new Collector();
                collectors.put(ep, c);
                ep.pipeline().addLast(c);
            }
        };
        DefaultWorker a = workers.start("a", sender, "TLS", tls);
        DefaultWorker b = workers.start("b", receiver, "TLS", tls);
        Endpoint ab = a.connect(b.address());
        assertTrue(ab.tagSend(0, TestWorkers.pattern(0, 2_000_000)).await(30, TimeUnit.SECONDS));
        Object m = awaitCollector(b, collectors).arrived.poll(30, TimeUnit.SECONDS);
        try {
            assertEquals(1, seenGoingDown.size(), seenGoingDown::toString);
            assertTrue(m instanceof TagMessage t && t.tag() == 100, () -> "came up: " + m);
            assertPattern(0, 2_000_000, ((TagMessage) m).content());
        } finally {
            ReferenceCountUtil.release(m);
        }
    }

    /** Every boundary of a's tables toward b (heap and direct), each with its neighbours, plus large messages. */
    private static TreeSet<Integer> boundaries(Worker a, Worker b) throws Exception {
        TreeSet<Integer> sizes = new TreeSet<>(List.of(0, 1, 4, 16, 700_000, 4 << 20));
        for (SelectionKey.MemoryType mem : new SelectionKey.MemoryType[] {SelectionKey.MemoryType.HEAP,
                SelectionKey.MemoryType.DIRECT}) {
            ProtoTable t = a.protocolTable(b.address(), mem);
            for (ProtoTable.Entry e : t.entries()) {
                for (long s = e.start() - 1; s <= e.start() + 1; s++) {
                    if (s >= 0 && s <= 8 << 20) {
                        sizes.add((int) s);
                    }
                }
            }
        }
        return sizes;
    }

    /** Small messages between each of the others, so a large one's slow completion would reorder what follows. */
    private static List<Integer> interleaved(TreeSet<Integer> boundaries) {
        List<Integer> out = new ArrayList<>();
        for (int size : boundaries.descendingSet()) {
            out.add(4);
            out.add(16);
            out.add(4);
            out.add(size);
        }
        return out;
    }

    private static ByteBuf content(long seed, int length, boolean direct) {
        ByteBuf heap = TestWorkers.pattern(seed, length);
        if (!direct) {
            return heap;
        }
        ByteBuf d = ByteBufAllocator.DEFAULT.directBuffer(Math.max(length, 1)).writeBytes(heap);
        heap.release();
        return d;
    }

    private static Collector awaitCollector(Worker b, Map<Endpoint, Collector> collectors) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            for (Endpoint ep : b.endpoints()) {
                Collector c = collectors.get(ep);
                if (c != null) {
                    return c;
                }
            }
            assertTrue(System.nanoTime() < deadline, "b has no endpoint");
            Thread.sleep(5);
        }
    }
}
