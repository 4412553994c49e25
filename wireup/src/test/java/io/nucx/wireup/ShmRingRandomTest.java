package io.nucx.wireup;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.util.ReferenceCountUtil;
import io.nucx.Endpoint;
import io.nucx.protocol.stream.StreamData;
import io.nucx.protocol.tag.TagReceive;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The shm lane end to end with a small ring: two workers over shm, several endpoints each way, tagged messages and
 * stream writes of 0 B to ~300 KiB (biased to the segment size, the ring's largest record and the ring size), from
 * heap and from direct buffers at odd offsets (placed payloads, fillers), to a receiver that stalls at random (its
 * loop held, so the ring fills and the producer waits; auto-read off; receives posted late). Every tagged message
 * arrives byte-exact and in its sender's order, every stream byte-exact, every send completes; "closeEndpoint" and
 * "closeWorker" close one side mid-traffic: then every send still completes and what arrived is an exact prefix.
 * Seed: {@code -Dtest.shm.seed=N} (not nucx.*: a worker's start refuses nucx.* properties it does not know).
 */
@Timeout(60)
class ShmRingRandomTest {

    @RegisterExtension
    final TestWorkers workers = new TestWorkers();

    private static final long WRITE_NANOS = TimeUnit.MILLISECONDS.toNanos(1500);
    private static final int MOST_OPS = 160;
    private static final long SENDER_MASK = 0xFFFF_FFFF_0000_0000L;

    private static long seed() {
        String s = System.getProperty("test.shm.seed");
        return s != null ? Long.parseLong(s) : System.nanoTime();
    }

    /** A size biased to the limits: the segment, the ring's largest record, the ring. */
    private static int size(SplittableRandom r, int seg, int ring) {
        int kind = r.nextInt(100);
        if (kind < 30) {
            return r.nextInt(r.nextBoolean() ? 16 : 600);
        }
        if (kind < 80) {
            int[] limits = {seg, seg - 8, seg - 16, ring / 8, ring / 8 - 16, ring / 2, ring, 2 * ring, 1024};
            return Math.max(0, limits[r.nextInt(limits.length)] + r.nextInt(-24, 25));
        }
        return r.nextInt(300 * 1024);
    }

    /** One sender's plan: an endpoint, its ops (tag or stream, size, buffer kind). */
    private static final class Sender {
        final int id;
        final DefaultWorker from;
        Endpoint ep;
        final List<int[]> ops = new ArrayList<>(); // {stream?1:0, size, kind}
        int tags;
        int streamBytes = 1; // the marker
        byte[] stream;
        final List<ChannelFuture> futures = new ArrayList<>();
        /** Receiver side: the next tag sequence due, what went wrong. Written on the receiver's loop. */
        volatile int nextSeq;
        int[] tagSizes;

        Sender(int id, DefaultWorker from) {
            this.id = id;
            this.from = from;
        }
    }

    /** Collects a stream as it comes. */
    private static final class Reader extends ChannelInboundHandlerAdapter {
        final ByteArrayOutputStream got = new ByteArrayOutputStream();
        volatile int count;
        volatile int marker = -1;
        volatile ChannelHandlerContext ctx;

        @Override
        public void handlerAdded(ChannelHandlerContext ctx) {
            this.ctx = ctx;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            try {
                if (msg instanceof ByteBuf b) {
                    byte[] a = new byte[b.readableBytes()];
                    b.getBytes(b.readerIndex(), a);
                    synchronized (got) {
                        if (got.size() == 0 && a.length > 0) {
                            marker = a[0];
                        }
                        got.write(a, 0, a.length);
                        count = got.size();
                    }
                }
            } finally {
                ReferenceCountUtil.release(msg);
            }
        }

        byte[] bytes() {
            synchronized (got) {
                return got.toByteArray();
            }
        }
    }

    /** A reusable receive per sender: checks order and bytes, posts itself again now or a little later. */
    private static final class Receiver implements TagReceive.Handler {
        final Sender s;
        final DefaultWorker at;
        final long seed;
        final SplittableRandom random;
        final TagReceive receive;
        final List<String> problems;
        volatile boolean failed;

        Receiver(Sender s, DefaultWorker at, long seed, List<String> problems) {
            this.s = s;
            this.at = at;
            this.seed = seed;
            this.random = new SplittableRandom(seed * 7 + s.id);
            this.problems = problems;
            this.receive = TagReceive.reusable((long) s.id << 32, SENDER_MASK, this);
        }

        @Override
        public void received(long tag, ByteBuf data) {
            try {
                int seq = (int) tag;
                int due = s.nextSeq;
                if (seq != due) {
                    problems.add("seed " + seed + ": sender " + s.id + "'s message " + seq + " came where " + due
                            + " was due");
                } else {
                    int n = s.tagSizes[seq];
                    byte[] expected = new byte[n];
                    new SplittableRandom(seed ^ tag).nextBytes(expected);
                    byte[] got = new byte[data.readableBytes()];
                    data.getBytes(data.readerIndex(), got);
                    int at = Arrays.mismatch(expected, got);
                    if (at >= 0) {
                        problems.add("seed " + seed + ": sender " + s.id + "'s message " + seq + " (" + n + " B, "
                                + got.length + " came) differs at byte " + at);
                    }
                    s.nextSeq = due + 1;
                }
            } finally {
                data.release();
            }
            if (random.nextInt(8) == 0) {
                at.eventLoop().schedule(() -> at.tagRecv(receive), random.nextInt(3), TimeUnit.MILLISECONDS);
            } else {
                at.tagRecv(receive);
            }
        }

        @Override
        public void failed(Throwable cause) {
            failed = true;
        }
    }

    /** {@code bytes} in a buffer of {@code kind}: 0 wrapped heap, 1 pooled direct, 2 direct at an odd offset. */
    private static ByteBuf buffer(byte[] bytes, int from, int n, int kind, int offset) {
        return switch (kind) {
            case 0 -> Unpooled.wrappedBuffer(bytes, from, n);
            case 1 -> ByteBufAllocator.DEFAULT.directBuffer(Math.max(n, 1)).writeBytes(bytes, from, n);
            default -> {
                ByteBuf d = ByteBufAllocator.DEFAULT.directBuffer(n + offset + 1).writeZero(offset)
                        .writeBytes(bytes, from, n);
                yield d.readerIndex(offset);
            }
        };
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"end", "end", "closeEndpoint", "closeWorker"})
    void randomTrafficOverASmallRingArrivesExactlyAndInOrder(String finish) throws Exception {
        long seed = seed();
        System.out.println("ShmRingRandomTest " + finish + ": seed " + seed);
        SplittableRandom plan = new SplittableRandom(seed);
        int ring = plan.nextBoolean() ? 64 * 1024 : 128 * 1024;
        int seg = plan.nextBoolean() ? 4096 : ring / 8 - 64; // the largest a ring of that size allows
        String cfg = "NUCX_SHM_RING_SIZE=" + ring + ";NUCX_SHM_SEG_SIZE=" + seg;
        String[] settings = TestWorkers.settings("shm", cfg);
        List<Reader> readers = new CopyOnWriteArrayList<>();
        ChannelInitializer<Endpoint> init = new ChannelInitializer<>() {
            @Override
            protected void initChannel(Endpoint ep) {
                Reader r = new Reader();
                readers.add(r);
                ep.pipeline().addLast(r);
            }
        };
        DefaultWorker a = workers.start("a", init, settings);
        DefaultWorker b = workers.start("b", init, settings);
        int forward = plan.nextInt(1, 4);
        int backward = plan.nextInt(0, 3);
        List<Sender> senders = new ArrayList<>();
        for (int i = 0; i < forward + backward; i++) {
            Sender s = new Sender(i + 1, i < forward ? a : b);
            s.ep = TestWorkers.wiredUp(s.from, s.from == a ? b : a);
            int ops = plan.nextInt(MOST_OPS / 2, MOST_OPS);
            for (int k = 0; k < ops; k++) {
                boolean stream = plan.nextInt(3) == 0;
                int n = size(plan, seg, ring);
                s.ops.add(new int[] {stream ? 1 : 0, n, plan.nextInt(3), plan.nextInt(1, 32)});
                if (stream) {
                    s.streamBytes += n;
                } else {
                    s.tags++;
                }
            }
            s.stream = new byte[s.streamBytes];
            new SplittableRandom(seed * 131 + s.id).nextBytes(s.stream);
            s.stream[0] = (byte) s.id;
            s.tagSizes = new int[s.tags];
            int t = 0;
            for (int[] op : s.ops) {
                if (op[0] == 0) {
                    s.tagSizes[t++] = op[1];
                }
            }
            senders.add(s);
        }
        String what = "seed " + seed + " (" + finish + ", ring " + ring + ", segment " + seg + ", " + forward
                + " endpoints a->b, " + backward + " b->a)";
        List<String> problems = new CopyOnWriteArrayList<>();
        List<Receiver> receivers = new ArrayList<>();
        for (Sender s : senders) {
            Receiver r = new Receiver(s, s.from == a ? b : a, seed, problems);
            receivers.add(r);
            r.at.tagRecv(r.receive);
        }
        for (Sender s : senders) {
            s.futures.add(s.from.eventLoop().submit(() -> s.ep.writeAndFlush(new StreamData(
                    Unpooled.wrappedBuffer(s.stream, 0, 1)))).get(10, TimeUnit.SECONDS));
        }
        int[] at = new int[senders.size()];
        int[] tagAt = new int[senders.size()];
        int[] streamAt = new int[senders.size()];
        Arrays.fill(streamAt, 1);
        int closeAfter = finish.equals("end") ? Integer.MAX_VALUE : plan.nextInt(5, 60);
        int batches = 0;
        Sender closedSender = null;
        DefaultWorker closedWorker = null;
        long start = System.nanoTime();
        boolean more = true;
        while (more && System.nanoTime() - start < WRITE_NANOS) {
            more = false;
            for (int i = 0; i < senders.size(); i++) {
                Sender s = senders.get(i);
                if (at[i] >= s.ops.size() || s == closedSender || s.from == closedWorker) {
                    continue;
                }
                more = true;
                int batch = Math.min(s.ops.size() - at[i], 1 + plan.nextInt(plan.nextBoolean() ? 3 : 20));
                int first = at[i];
                int tagFirst = tagAt[i];
                int streamFirst = streamAt[i];
                List<ChannelFuture> made = s.from.eventLoop().submit(() -> {
                    List<ChannelFuture> fs = new ArrayList<>();
                    int t = tagFirst;
                    int p = streamFirst;
                    for (int k = first; k < first + batch; k++) {
                        int[] op = s.ops.get(k);
                        int n = op[1];
                        if (op[0] == 1) {
                            ByteBuf d = buffer(s.stream, p, n, op[2], op[3]);
                            p += n;
                            fs.add(s.ep.write(new StreamData(d)));
                        } else {
                            long tag = (long) s.id << 32 | t++;
                            byte[] bytes = new byte[n];
                            new SplittableRandom(seed ^ tag).nextBytes(bytes);
                            ByteBuf d = buffer(bytes, 0, n, op[2], op[3]);
                            fs.add(s.ep.tagSend(tag, d));
                        }
                    }
                    s.ep.flush();
                    return fs;
                }).get(10, TimeUnit.SECONDS);
                s.futures.addAll(made);
                for (int k = first; k < first + batch; k++) {
                    int[] op = s.ops.get(k);
                    if (op[0] == 1) {
                        streamAt[i] += op[1];
                    } else {
                        tagAt[i]++;
                    }
                }
                at[i] += batch;
            }
            // The receiver stalls now and then: a held loop (the ring fills, the producer waits), auto-read off.
            int stall = plan.nextInt(12);
            DefaultWorker victim = plan.nextBoolean() ? b : a;
            if (victim != closedWorker) {
                if (stall == 0) {
                    CountDownLatch go = TestWorkers.holdLoop(victim);
                    Thread.sleep(plan.nextInt(1, 15));
                    go.countDown();
                } else if (stall == 1) {
                    List<Endpoint> eps = new ArrayList<>(victim.endpoints());
                    victim.eventLoop().submit(() -> eps.forEach(e -> e.config().setAutoRead(false)))
                            .get(10, TimeUnit.SECONDS);
                    Thread.sleep(plan.nextInt(1, 10));
                    victim.eventLoop().submit(() -> eps.forEach(e -> e.config().setAutoRead(true)))
                            .get(10, TimeUnit.SECONDS);
                }
            }
            if (++batches == closeAfter) {
                if (finish.equals("closeEndpoint")) {
                    closedSender = senders.get(plan.nextInt(senders.size()));
                    Sender c = closedSender;
                    c.from.eventLoop().execute(c.ep::close);
                } else {
                    closedWorker = plan.nextBoolean() ? b : a;
                    closedWorker.close();
                }
            }
        }
        String ran = what + ", " + batches + " rounds, ops sent " + Arrays.toString(at);
        System.out.println(ran);
        // A connect back adopts the endpoint its peer's connect made (EndpointMatch): the closed sender's endpoint may
        // be another sender's too, from the other side, and that sender's connection closed with it.
        List<Sender> closedSide = new ArrayList<>();
        for (Sender s : senders) {
            if (closedSender != null && sameConnection(closedSender, s)) {
                closedSide.add(s);
            }
        }
        // Every send completes; with no close, successfully.
        for (Sender s : senders) {
            for (ChannelFuture f : s.futures) {
                assertTrue(f.await(10, TimeUnit.SECONDS), () -> ran + ": sender " + s.id + "'s send never completed");
                boolean mayFail = closedWorker != null || closedSide.contains(s);
                assertTrue(f.isSuccess() || mayFail, () -> ran + ": sender " + s.id + "'s send failed: " + f.cause());
            }
        }
        // Tagged messages: all of them (the closed side's: a prefix), in order; streams likewise.
        for (int i = 0; i < senders.size(); i++) {
            Sender s = senders.get(i);
            boolean whole = closedWorker == null && !closedSide.contains(s);
            int tags = tagAt[i];
            int bytes = streamAt[i];
            if (whole) {
                await(() -> s.nextSeq >= tags || !problems.isEmpty(), ran + ": sender " + s.id + "'s " + tags
                        + " messages (" + s.nextSeq + " came)", seed);
                await(() -> readerOf(readers, s.id) != null && readerOf(readers, s.id).count >= bytes
                        || !problems.isEmpty(), ran + ": sender " + s.id + "'s " + bytes + " stream bytes", seed);
            }
            assertTrue(problems.isEmpty(), () -> ran + ": " + problems.subList(0, Math.min(5, problems.size())));
            assertTrue(s.nextSeq <= tags, ran + ": sender " + s.id + " more messages came than were sent");
            Reader r = readerOf(readers, s.id);
            if (r != null) {
                byte[] got = r.bytes();
                assertTrue(got.length <= bytes, ran + ": sender " + s.id + ": " + got.length + " stream bytes, "
                        + bytes + " written");
                int mismatch = Arrays.mismatch(s.stream, 0, got.length, got, 0, got.length);
                assertTrue(mismatch < 0, ran + ": sender " + s.id + "'s stream differs at byte " + mismatch);
                if (whole) {
                    assertEquals(bytes, got.length, ran + ": sender " + s.id + "'s stream bytes");
                }
            } else {
                assertTrue(!whole, ran + ": sender " + s.id + "'s stream never came");
            }
        }
        if (closedWorker == null) {
            for (DefaultWorker w : List.of(a, b)) {
                assertEquals(0, (int) w.eventLoop().submit(() -> w.protocols().matcher().unexpectedCount())
                        .get(10, TimeUnit.SECONDS), ran + ": messages left unexpected on " + w.name());
            }
        }
    }

    /** Whether {@code t} sends on {@code s}'s connection: the same endpoint, or its other side (adopted). */
    private static boolean sameConnection(Sender s, Sender t) throws Exception {
        if (s == t) {
            return true;
        }
        if (s.from == t.from) {
            return false;
        }
        long peerOfS = s.from.eventLoop().submit(() -> TestWorkers.impl(s.ep).remoteEndpointId())
                .get(10, TimeUnit.SECONDS);
        return peerOfS == t.ep.endpointId();
    }

    /** The reader whose stream began with sender {@code id}'s marker. */
    private static Reader readerOf(List<Reader> readers, int id) {
        for (Reader r : readers) {
            if (r.marker == (byte) id) {
                return r;
            }
        }
        return null;
    }

    private static void await(BooleanSupplier done, String what, long seed) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!done.getAsBoolean()) {
            assertTrue(System.nanoTime() < deadline, () -> "seed " + seed + ": timed out waiting for " + what);
            Thread.sleep(2);
        }
    }
}
