package io.nucx.wireup;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.util.ReferenceCountUtil;
import io.nucx.Endpoint;
import io.nucx.protocol.stream.StreamCodec;
import io.nucx.protocol.stream.StreamData;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The endpoint byte stream under a random mix: writes of 0 to about 300 KiB, biased toward the stream's and the
 * transports' size limits (the short record's maximum, the gathering buffer's first size and 1 KiB keep bound, its
 * 64 KiB limit, tcp's 16 KiB batch, fragment and segment sizes), sent every way a writer can (the short route,
 * {@code write} with and without a promise, {@code writeAndFlush}, a void promise; heap, direct, offset and composite
 * buffers), to a reader that holds some buffers and consumes them later in odd chunks, pauses (auto-read off, then
 * {@code read()}s) and resumes. The concatenated bytes must be exactly those written, no buffer may come up again
 * while the reader holds it, every write completes, and once the end arrived all credit is back and nothing leaks.
 * Seed: {@code -Dtest.stream.seed=N} repeats a run (not nucx.*: a worker's start
 * refuses nucx.* properties it does not know); every assertion names the seed.
 */
@Timeout(120)
class StreamRandomMixTest {

    @RegisterExtension
    final TestWorkers workers = new TestWorkers();

    /** Sizes near which the stream's or a transport's behaviour changes. */
    private static final int[] LIMITS = {256, 1024, 8 * 1024, 16 * 1024, 64 * 1024, 128 * 1024, 256 * 1024};
    private static final int MOST = 300 * 1024;
    /** Wall time each run spends writing, and the most writes it makes. */
    private static final long WRITE_NANOS = TimeUnit.MILLISECONDS.toNanos(900);
    private static final int MOST_WRITES = 1000;

    private static long seed() {
        String s = System.getProperty("test.stream.seed");
        return s != null ? Long.parseLong(s) : System.nanoTime();
    }

    /**
     * A size: mostly short, often at a limit (within 9 bytes either side), sometimes anything up to ~300 KiB; with
     * {@code shortOnly}, up to just past tcp's 16 KiB batch.
     */
    private static int size(SplittableRandom r, boolean shortOnly) {
        int kind = r.nextInt(shortOnly ? 80 : 100);
        if (shortOnly && kind >= 45) {
            return Math.max(0, LIMITS[r.nextInt(4)] + r.nextInt(-9, 10) - (r.nextBoolean() ? 8 : 0));
        }
        if (kind < 45) {
            return r.nextInt(r.nextBoolean() ? 48 : 300);
        }
        if (kind < 80) {
            int limit = LIMITS[r.nextInt(LIMITS.length)];
            return Math.max(0, limit + r.nextInt(-9, 10) - (r.nextBoolean() ? 8 : 0));
        }
        if (kind < 92) {
            return r.nextInt(2, 16 * 1024);
        }
        return r.nextInt(MOST);
    }

    /** The reader: holds some buffers, consumes in odd chunks later, checks none comes up twice while held. */
    static final class SlowReader extends ChannelInboundHandlerAdapter {
        final long seed;
        final SplittableRandom random;
        final byte[] got;
        volatile int at;
        volatile int buffers;
        volatile boolean ended;
        final CountDownLatch endSeen = new CountDownLatch(1);
        final List<String> problems = new CopyOnWriteArrayList<>();
        /** What the reader holds: the buffer it reads from (itself or a retained slice), and the one that came up. */
        final ArrayDeque<ByteBuf[]> held = new ArrayDeque<>();
        final Set<ByteBuf> holding = Collections.newSetFromMap(new IdentityHashMap<>());
        volatile ChannelHandlerContext ctx;
        private boolean consuming;

        SlowReader(long seed, int total) {
            this.seed = seed;
            this.random = new SplittableRandom(seed ^ 0x5DEECE66DL);
            this.got = new byte[total];
        }

        @Override
        public void handlerAdded(ChannelHandlerContext ctx) {
            this.ctx = ctx;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (!(msg instanceof ByteBuf b)) {
                problems.add("seed " + seed + ": not bytes: " + msg);
                ReferenceCountUtil.release(msg);
                return;
            }
            buffers++;
            if (holding.contains(b)) {
                problems.add("seed " + seed + ": buffer " + b + " came up again while the reader holds it");
            }
            if (ended) {
                problems.add("seed " + seed + ": " + b.readableBytes() + " bytes after the end");
            }
            if (held.isEmpty() && random.nextInt(3) != 0) {
                consume(b, b.readableBytes());
                b.release();
                return;
            }
            int choice = random.nextInt(3);
            ByteBuf keep = b;
            if (choice == 0 && held.isEmpty() && b.readableBytes() > 1) {
                // Some bytes now (nothing held before them), the rest kept as a retained slice, the buffer let go.
                consume(b, random.nextInt(b.readableBytes()));
                keep = b.retainedSlice();
                b.release();
            }
            held.add(new ByteBuf[] {keep, b});
            holding.add(b);
            if (!consuming) {
                consuming = true;
                ctx.executor().schedule(this::consumeSome, random.nextInt(3), TimeUnit.MILLISECONDS);
            }
        }

        /** A few odd-sized chunks off the held buffers, in order; again later while any are held. */
        private void consumeSome() {
            for (int i = random.nextInt(1, 6); i > 0 && !held.isEmpty(); i--) {
                ByteBuf[] h = held.peek();
                ByteBuf b = h[0];
                int n = Math.min(b.readableBytes(), 1 + random.nextInt(random.nextBoolean() ? 17 : 70_000));
                consume(b, n);
                if (!b.isReadable()) {
                    held.poll();
                    holding.remove(h[1]);
                    b.release();
                }
            }
            if (held.isEmpty()) {
                consuming = false;
            } else {
                ctx.executor().schedule(this::consumeSome, random.nextInt(3), TimeUnit.MILLISECONDS);
            }
        }

        private void consume(ByteBuf b, int n) {
            int now = at;
            if (now + n > got.length) {
                problems.add("seed " + seed + ": " + (now + n) + " bytes came, only " + got.length + " were written");
                b.skipBytes(n);
                return;
            }
            b.readBytes(got, now, n);
            at = now + n;
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            if (evt instanceof ChannelInputShutdownEvent) {
                ended = true;
                endSeen.countDown();
            }
            ctx.fireUserEventTriggered(evt);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            problems.add("seed " + seed + ": caught " + cause);
        }

        /** The first few problems and how many there were: one mistake repeats for every buffer after it. */
        String firstProblems() {
            return problems.size() + " problems, the first: " + problems.subList(0, Math.min(5, problems.size()));
        }

        /** Whatever is still held let go (at the test's end, on the loop). */
        void releaseHeld() {
            held.forEach(h -> h[0].release());
            held.clear();
            holding.clear();
        }
    }

    @ParameterizedTest(name = "{0} {1}")
    @CsvSource({
        "self, end",
        "shm, end",
        "tcp, end",
        "'shm,cma', end",
        "self, close",
        "shm, close",
        "tcp, close",
        "shm, peer",
        "tcp, peer",
    })
    void aRandomMixOfWritesArrivesExactlyToASlowOddReader(String tls, String finish) throws Exception {
        long seed = seed();
        System.out.println("StreamRandomMixTest " + tls + " " + finish + ": seed " + seed);
        SplittableRandom plan = new SplittableRandom(seed);
        boolean shortOnly = plan.nextInt(3) == 0;
        int[] sizes = new int[MOST_WRITES];
        long sum = 0;
        for (int i = 0; i < sizes.length; i++) {
            sizes[i] = size(plan, shortOnly);
            sum += sizes[i];
        }
        byte[] stream = new byte[(int) sum];
        new SplittableRandom(seed * 31 + 7).nextBytes(stream);
        boolean autoRead = plan.nextBoolean();
        SlowReader[] reader = new SlowReader[1];
        ChannelInitializer<Endpoint> init = new ChannelInitializer<>() {
            @Override
            protected void initChannel(Endpoint ep) {
                ep.config().setAutoRead(autoRead);
                reader[0] = new SlowReader(seed, stream.length);
                ep.pipeline().addLast(reader[0]);
            }
        };
        String[] settings = TestWorkers.settings(tls, "-");
        DefaultWorker a = workers.start("a", settings);
        DefaultWorker b = workers.start("b", init, settings);
        Endpoint ab = TestWorkers.wiredUp(a, b);
        await(() -> reader[0] != null && reader[0].ctx != null, "the peer's reader", seed);
        SlowReader r = reader[0];
        Endpoint ba = (Endpoint) r.ctx.channel();
        List<ChannelFuture> futures = new ArrayList<>();
        List<String> log = new ArrayList<>(); // the writes, for the failure message
        int writes = 0;
        int pos = 0;
        // "peer": the reader's endpoint closes after this many writes, and the writer goes on for a few more batches.
        int peerClosesAt = finish.equals("peer") ? plan.nextInt(50, 600) : Integer.MAX_VALUE;
        int stopAt = Integer.MAX_VALUE;
        long start = System.nanoTime();
        try {
            // The writer, in batches on a's loop; the reader paused and resumed now and then meanwhile.
            while (writes < sizes.length && System.nanoTime() - start < WRITE_NANOS) {
                if (writes >= stopAt) {
                    break;
                }
                if (writes >= peerClosesAt) {
                    b.eventLoop().execute(ba::close);
                    peerClosesAt = Integer.MAX_VALUE;
                    stopAt = writes + plan.nextInt(1, 80);
                }
                int batch = Math.min(sizes.length - writes, 1 + plan.nextInt(plan.nextBoolean() ? 4 : 40));
                int[] modes = new int[batch];
                int[] kinds = new int[batch];
                for (int i = 0; i < batch; i++) {
                    modes[i] = plan.nextInt(6);
                    kinds[i] = plan.nextInt(5);
                }
                int first = writes;
                int from = pos;
                a.eventLoop().submit(() -> {
                    int p = from;
                    for (int i = 0; i < batch; i++) {
                        int n = sizes[first + i];
                        ByteBuf data = content(stream, p, n, kinds[i]);
                        p += n;
                        ChannelFuture f = write(ab, data, modes[i]);
                        if (f != null) {
                            futures.add(f);
                        }
                        log.add(n + "B/m" + modes[i] + "k" + kinds[i]);
                    }
                    ab.flush();
                }).get(30, TimeUnit.SECONDS);
                for (int i = 0; i < batch; i++) {
                    pos += sizes[writes + i];
                }
                writes += batch;
                int pause = plan.nextInt(10);
                if (pause == 0) {
                    b.eventLoop().submit(() -> ba.config().setAutoRead(false)).get(30, TimeUnit.SECONDS);
                    Thread.sleep(plan.nextInt(1, 8));
                    boolean resume = autoRead || plan.nextBoolean();
                    b.eventLoop().submit(() -> ba.config().setAutoRead(resume)).get(30, TimeUnit.SECONDS);
                } else if (pause < 3) {
                    Thread.sleep(plan.nextInt(3));
                }
                if (!autoRead || pause == 1) {
                    b.eventLoop().execute(ba::read);
                }
            }
            int total = pos;
            int count = writes;
            String what = "seed " + seed + " over " + tls + " (auto-read " + autoRead + "), " + count + " writes of "
                    + total + " B" + (shortOnly ? " (short only), " : ", ") + finish;
            // The end, or a close of the writer's endpoint right behind the writes.
            ChannelFuture closed = null;
            if (finish.equals("peer")) {
                // The reader's endpoint closes mid-stream, holding what it holds: every write completes either way,
                // what was read is what was written, and nothing leaks (the extension checks).
                assertTrue(b.eventLoop().submit(() -> ba.close()).get(30, TimeUnit.SECONDS).await(30, TimeUnit.SECONDS),
                        () -> what + ": the reader's close did not complete");
                for (ChannelFuture f : futures) {
                    assertTrue(f.await(30, TimeUnit.SECONDS), () -> what + ": a write never completed");
                }
                await(() -> onLoop(b, r.held::isEmpty) || !r.problems.isEmpty(), what + ": the held bytes consumed",
                        seed);
                int read = r.at;
                assertTrue(r.problems.isEmpty(), () -> what + ": " + r.firstProblems());
                int mismatch = Arrays.mismatch(stream, 0, read, r.got, 0, read);
                assertTrue(mismatch < 0, () -> what + ": byte " + mismatch + " of the " + read + " read differs");
                System.out.println(what + ": " + read + " B read before the close, " + r.buffers + " buffers");
                return;
            }
            if (finish.equals("end")) {
                futures.add(a.eventLoop().submit(() -> ab.writeAndFlush(StreamData.end())).get(30, TimeUnit.SECONDS));
            } else {
                closed = a.eventLoop().submit(() -> ab.close()).get(30, TimeUnit.SECONDS);
            }
            // A reader that does not read on its own is asked until everything came.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (r.endSeen.getCount() > 0) {
                if (System.nanoTime() > deadline) {
                    String state = a.eventLoop().submit(() -> TestWorkers.impl(ab).pipeline()
                            .get(StreamCodec.class).credit() + " credit, "
                            + TestWorkers.impl(ab).pipeline().get(StreamCodec.class).waitingWrites()
                            + " waiting").get(30, TimeUnit.SECONDS);
                    fail(what + ": stuck at " + r.at + " B read, " + r.buffers + " buffers (writer: " + state
                            + "); last writes " + log.subList(Math.max(0, log.size() - 12), log.size()));
                }
                b.eventLoop().execute(ba::read);
                Thread.sleep(1);
            }
            for (ChannelFuture f : futures) {
                assertTrue(f.await(30, TimeUnit.SECONDS) && f.isSuccess(), () -> what + ": write " + f.cause());
            }
            await(() -> r.at >= total || !r.problems.isEmpty(), what + ": the held bytes consumed", seed);
            assertTrue(r.problems.isEmpty(), () -> what + ": " + r.firstProblems());
            assertEquals(total, r.at, what + ": bytes read");
            int mismatch = Arrays.mismatch(stream, 0, total, r.got, 0, total);
            if (mismatch >= 0) {
                int w = 0;
                for (int p = 0; w < log.size(); w++) {
                    p += sizes[w];
                    if (p > mismatch) {
                        break;
                    }
                }
                int around = w;
                fail(what + ": byte " + mismatch + " differs (write " + around + ", " + log.get(around)
                        + "; writes before it " + log.subList(Math.max(0, around - 8), around) + ")");
            }
            System.out.println(what + ": " + r.buffers + " buffers came up");
            if (closed != null) {
                ChannelFuture c = closed;
                assertTrue(c.await(30, TimeUnit.SECONDS) && c.isSuccess(), () -> what + ": close " + c.cause());
            } else {
                // The end gives all credit back; the reader holds nothing undelivered.
                StreamCodec sender = TestWorkers.impl(ab).pipeline().get(StreamCodec.class);
                StreamCodec receiver = TestWorkers.impl(ba).pipeline().get(StreamCodec.class);
                await(() -> onLoop(a, () -> sender.credit() == StreamCodec.WINDOW), what + ": all credit back "
                        + "(" + onLoop(a, () -> sender.credit()) + ")", seed);
                assertEquals(0, (int) b.eventLoop().submit(receiver::undelivered).get(30, TimeUnit.SECONDS),
                        what + ": undelivered");
            }
        } finally {
            b.eventLoop().submit(r::releaseHeld).get(10, TimeUnit.SECONDS);
        }
    }

    /**
     * Write {@code mode}: 0 the short route (else a write), 1 {@code write}, 2 {@code writeAndFlush}, 3 {@code write}
     * with a promise, 4 {@code writeAndFlush} with a promise, 5 a void promise. Returns the future to wait for.
     */
    private static ChannelFuture write(Endpoint ab, ByteBuf data, int mode) {
        return switch (mode) {
            case 0 -> {
                if (ab.trySendStreamShort(data)) {
                    data.release();
                    yield null;
                }
                yield ab.write(new StreamData(data));
            }
            case 1 -> ab.write(new StreamData(data));
            case 2 -> ab.writeAndFlush(new StreamData(data));
            case 3 -> ab.write(new StreamData(data), ab.newPromise());
            case 4 -> ab.writeAndFlush(new StreamData(data), ab.newPromise());
            default -> {
                ab.write(new StreamData(data), ab.voidPromise());
                yield null;
            }
        };
    }

    /**
     * {@code stream[at, at + n)} in a buffer of {@code kind}: 0 wrapped heap with bytes before and after, 1 pooled
     * heap, 2 pooled direct, 3 pooled direct read from an offset, 4 a composite of two pooled parts.
     */
    private static ByteBuf content(byte[] stream, int at, int n, int kind) {
        ByteBufAllocator alloc = ByteBufAllocator.DEFAULT;
        return switch (kind) {
            case 0 -> {
                byte[] b = new byte[n + 13];
                System.arraycopy(stream, at, b, 5, n);
                yield Unpooled.wrappedBuffer(b, 5, n);
            }
            case 1 -> alloc.heapBuffer(Math.max(n, 1)).writeBytes(stream, at, n);
            case 2 -> alloc.directBuffer(Math.max(n, 1)).writeBytes(stream, at, n);
            case 3 -> {
                ByteBuf d = alloc.directBuffer(n + 11).writeZero(7).writeBytes(stream, at, n).writeZero(4);
                yield d.readerIndex(7).writerIndex(7 + n);
            }
            default -> {
                int half = n / 2;
                CompositeByteBuf c = alloc.compositeBuffer(2);
                c.addComponents(true, alloc.directBuffer(Math.max(half, 1)).writeBytes(stream, at, half),
                        alloc.heapBuffer(Math.max(n - half, 1)).writeBytes(stream, at + half, n - half));
                yield c;
            }
        };
    }

    private static boolean onLoop(DefaultWorker w, BooleanSupplier check) {
        try {
            return w.eventLoop().submit(check::getAsBoolean).get(10, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    private static long onLoop(DefaultWorker w, LongSupplier value) {
        try {
            return w.eventLoop().submit(value::getAsLong).get(10, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    private static void await(BooleanSupplier done, String what, long seed) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!done.getAsBoolean()) {
            assertTrue(System.nanoTime() < deadline, () -> "seed " + seed + ": timed out waiting for " + what);
            Thread.sleep(2);
        }
    }
}
