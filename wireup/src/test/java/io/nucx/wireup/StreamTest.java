package io.nucx.wireup;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.channel.socket.ChannelOutputShutdownException;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.ResourceLeakDetector;
import io.netty.util.concurrent.Future;
import io.nucx.Endpoint;
import io.nucx.protocol.stream.StreamCodec;
import io.nucx.protocol.stream.StreamData;
import io.nucx.protocol.tag.TagMessage;
import io.nucx.transport.shm.ShmChannel;
import io.nucx.transport.tcp.AmFrameDecoder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The endpoint byte stream: writes of every size (each protocol of the table: eager short, copy, fragments, zero-copy
 * and rendezvous by fragments, GET and PUT) come up the peer's pipeline as ByteBufs in write order, away from tag
 * matching; a reader that stops reading stops the writer after one window; the end of the stream comes after its last
 * byte; a close loses nothing the peer still reads.
 */
@Timeout(180)
class StreamTest {

    @RegisterExtension
    final TestWorkers workers = new TestWorkers();

    /** Collects the stream's bytes in the order they come up; counts the end and anything that is not a ByteBuf. */
    static final class Reader extends ChannelInboundHandlerAdapter {
        final ByteBuf received = ByteBufAllocator.DEFAULT.heapBuffer();
        final CountDownLatch ended = new CountDownLatch(1);
        volatile long bytes;
        /** ByteBufs that came up: as many as writes, or fewer where short writes arrived gathered. */
        volatile int reads;
        volatile long endedAt = -1;
        final List<Object> strays = new CopyOnWriteArrayList<>();
        volatile ChannelHandlerContext ctx;

        @Override
        public void handlerAdded(ChannelHandlerContext ctx) {
            this.ctx = ctx;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (msg instanceof ByteBuf b) {
                reads++;
                bytes += b.readableBytes();
                received.writeBytes(b);
            } else {
                strays.add(msg.toString());
            }
            ReferenceCountUtil.release(msg);
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            if (evt instanceof ChannelInputShutdownEvent) {
                endedAt = bytes;
                ended.countDown();
            }
            ctx.fireUserEventTriggered(evt);
        }
    }

    private final Map<Endpoint, Reader> readers = new ConcurrentHashMap<>();

    /** What the readers collected outlives their endpoints (a closed endpoint's is checked after): released here. */
    @org.junit.jupiter.api.AfterEach
    void releaseReaders() {
        readers.values().forEach(r -> r.received.release());
    }

    private ChannelInitializer<Endpoint> reader(boolean autoRead) {
        return new ChannelInitializer<>() {
            @Override
            protected void initChannel(Endpoint ep) {
                ep.config().setAutoRead(autoRead);
                Reader r = new Reader();
                readers.put(ep, r);
                ep.pipeline().addLast(r);
            }
        };
    }

    /** The peer's reader, once in its endpoint's pipeline (it is listed a moment before its handlerAdded runs). */
    private Reader awaitReader() throws InterruptedException {
        await(() -> !readers.isEmpty() && readers.values().iterator().next().ctx != null, "the peer's endpoint");
        return readers.values().iterator().next();
    }

    @ParameterizedTest(name = "{0} {1}")
    @CsvSource({
        "tcp, -",
        "self, -",
        "shm, -",
        "'shm,cma', RNDV_SCHEME=get_zcopy;SHM_COPY_BW=1g",
        "'shm,cma', RNDV_SCHEME=put_zcopy;SHM_COPY_BW=1g",
    })
    void writesOfEveryProtocolArriveInOrderAndNeverReachTagMatching(String tls, String setting) throws Exception {
        String[] settings = TestWorkers.settings(tls, setting);
        DefaultWorker a = workers.start("a", settings);
        DefaultWorker b = workers.start("b", reader(true), settings);
        // Posted before anything is written: if stream bytes reached the matcher, this would take them.
        Future<TagMessage> wildcard = b.tagRecv(0, 0);
        Endpoint ab = a.connect(b.address());
        int[] sizes = {4, 0, 1, 16, 4, 8 << 20, 4, 700_000, 16, 70_000, 4, 3 << 20, 1, 65_000, 9_000, 4 << 20, 4};
        long total = 0;
        List<ChannelFuture> sends = new ArrayList<>();
        for (int i = 0; i < sizes.length; i++) {
            sends.add(ab.streamSend(content(i, sizes[i], i % 2 == 1)));
            total += sizes[i];
        }
        for (ChannelFuture f : sends) {
            assertTrue(f.await(60, TimeUnit.SECONDS) && f.isSuccess(), () -> "stream write: " + f.cause());
        }
        awaitInOrder(b, sizes, total);
        // The wildcard receive takes the first tagged message, which was written after the stream: it saw no stream.
        ab.tagSend(77, TestWorkers.pattern(5, 10)).sync();
        TagMessage m = wildcard.get(30, TimeUnit.SECONDS);
        try {
            assertEquals(77, m.tag(), "the wildcard receive took something other than the tagged message");
        } finally {
            m.release();
        }
        Map<String, Long> used = a.counters().snapshot();
        assertTrue(used.entrySet().stream().anyMatch(e -> e.getKey().startsWith("egr/") && e.getValue() > 0)
                && used.getOrDefault("tag/rndv", 0L) + used.getOrDefault("rndv/get/zcopy", 0L) > 0, used::toString);
        if (setting.startsWith("RNDV_SCHEME")) {
            String recv = setting.contains("get_zcopy") ? "recv:rndv/get/zcopy" : "recv:rndv/put/zcopy";
            assertTrue(b.counters().count(recv) > 0, () -> recv + ": " + b.counters().snapshot());
        }
    }

    /**
     * Over shm a stream write in fragments, up to 1 MiB, goes from the ring straight into one buffer of the whole, its
     * first fragment too (a Netty app's writes over nucx: its first 64 KiB were copied out of the ring into a buffer of
     * the lane's, then again into that one); a bigger one is put together as before. Each arrives whole, in order.
     */
    @Test
    void overShmAStreamWriteInFragmentsGoesFromTheRingStraightIntoOneBuffer() throws Exception {
        long placed = placedOverShm("1g", 100_000, 1 << 20, 2 << 20, 70_000);
        // Every byte of the three under 1 MiB but a last fragment under the 1 KiB the ring places from; none of 2 MiB.
        long whole = 100_000 + (1 << 20) + 70_000;
        assertTrue(placed <= whole && placed > whole - 3 * 1024, () -> placed + " bytes copied from the ring "
                + "straight into a write's buffer, of " + whole);
    }

    /**
     * A stream write sent by rendezvous over the ring (shm alone: no cma to read it with) is received into one buffer
     * of the whole, taken when this side asks for the data: the lane copies each fragment from the ring straight
     * there, where copies of each fragment were put together at the end (two more copies of every byte).
     */
    @Test
    void overShmARendezvousStreamWriteGoesFromTheRingStraightIntoOneBuffer() throws Exception {
        long all = (4 << 20) + 3 + 300_000 + (1 << 20) + 5;
        long placed = placedOverShm("64k", (4 << 20) + 3, 300_000, (1 << 20) + 5);
        // Every byte but each write's last fragment when that is under the 1 KiB the ring places from.
        assertTrue(placed <= all && placed > all - 3 * 1024, () -> placed + " bytes copied from the ring straight "
                + "into a write's buffer, of " + all);
    }

    /**
     * Over tcp a stream write in one frame (eager, up to a segment) goes into a buffer of its own: read there from the
     * socket once its header has come, or copied there from the read that brought it whole (which one depends on when
     * the receiving loop read; TcpPayloadPlacementTest shows each way), where every read of it was appended to the lane's
     * cumulation first and the frame's payload sliced out of it.
     */
    @Test
    void overTcpAWholeStreamWriteIsReadStraightIntoItsBuffer() throws Exception {
        // epoll: tcp lanes place payloads on epoll and nio, not on io_uring (the default without busy-polling).
        DefaultWorker a = workers.start("a", "TLS", "tcp", "TCP_IO", "epoll", "RNDV_THRESH", "1g");
        DefaultWorker b = workers.start("b", reader(true), "TLS", "tcp", "TCP_IO", "epoll", "RNDV_THRESH", "1g");
        int[] sizes = new int[40];
        for (int i = 0; i < sizes.length; i++) {
            sizes[i] = 100_000 + i;
        }
        long all = writeInOrder(a.connect(b.address()), b, sizes);
        AmFrameDecoder decoder = TestWorkers.impl(b.endpoints().iterator().next()).amLane()
                .pipeline().get(AmFrameDecoder.class);
        long placed = b.eventLoop().submit(decoder::placedFrameBytes).get(10, TimeUnit.SECONDS);
        assertTrue(placed > all / 2, () -> "only " + placed + " of " + all + " bytes went into a write's own buffer");
    }

    /**
     * Writes {@code sizes} over shm alone with the rendezvous from {@code rndvThresh}, checks that they arrive in
     * order, and returns how many bytes the receiving lane copied from its ring straight into a write's buffer.
     */
    private long placedOverShm(String rndvThresh, int... sizes) throws Exception {
        DefaultWorker a = workers.start("a", "TLS", "shm", "RNDV_THRESH", rndvThresh);
        DefaultWorker b = workers.start("b", reader(true), "TLS", "shm", "RNDV_THRESH", rndvThresh);
        writeInOrder(a.connect(b.address()), b, sizes);
        ShmChannel lane = (ShmChannel) TestWorkers.impl(b.endpoints().iterator().next()).amLane();
        return b.eventLoop().submit(lane::placedBytes).get(10, TimeUnit.SECONDS);
    }

    /**
     * Writes {@code sizes} (write i: {@link #content} of seed i, direct when i is even) one after another on
     * {@code ab}, each completed before the next, checks that {@code b}'s reader gets them in order, and returns
     * their total size.
     */
    private long writeInOrder(Endpoint ab, DefaultWorker b, int... sizes) throws Exception {
        long total = 0;
        for (int i = 0; i < sizes.length; i++) {
            ChannelFuture f = ab.streamSend(content(i, sizes[i], i % 2 == 0));
            assertTrue(f.await(60, TimeUnit.SECONDS) && f.isSuccess(), () -> "stream write: " + f.cause());
            total += sizes[i];
        }
        awaitInOrder(b, sizes, total);
        return total;
    }

    /**
     * Short writes go straight into the lane ({@code trySendStreamShort}, and a {@code StreamData} write by the same
     * route: no promise, no walk) and arrive in order with the ordinary writes between them, gathered: the short
     * writes of one read batch (a ring's, a socket read's, taken from it in place) come up as one buffer, as a
     * socket's read returns what arrived.
     */
    @ParameterizedTest(name = "{0}")
    @CsvSource({"shm", "self", "tcp"})
    void shortWritesGoStraightIntoTheLaneAndArriveGatheredInOrder(String tls) throws Exception {
        DefaultWorker a = workers.start("a", "TLS", tls);
        DefaultWorker b = workers.start("b", reader(true), "TLS", tls);
        Endpoint ab = a.connect(b.address());
        ab.wireupFuture().sync();
        // Sizes 1 to 40 bytes, every 100th an ordinary large write between the short ones.
        int count = 3000;
        int[] sizes = new int[count];
        for (int i = 0; i < count; i++) {
            sizes[i] = i % 100 == 99 ? 70_000 + i : 1 + i % 40;
        }
        int[] direct = new int[2]; // [0]: trySendStreamShort took it, [1]: a StreamData write done on return
        List<ChannelFuture> pending = new ArrayList<>();
        a.eventLoop().submit(() -> {
            for (int i = 0; i < count; i++) {
                ByteBuf data = content(i, sizes[i], i % 3 == 0);
                if (i % 2 == 0 && ab.trySendStreamShort(data)) {
                    direct[0]++;
                    data.release(); // still the caller's after the copy
                    continue;
                }
                ChannelFuture f = ab.write(new StreamData(data));
                if (f.isDone() && f.isSuccess() && sizes[i] < 1024) {
                    direct[1]++;
                } else {
                    pending.add(f);
                }
            }
            ab.flush();
        }).get(60, TimeUnit.SECONDS);
        for (ChannelFuture f : pending) {
            assertTrue(f.await(60, TimeUnit.SECONDS) && f.isSuccess(), () -> "stream write: " + f.cause());
        }
        long total = Arrays.stream(sizes).asLongStream().sum();
        awaitInOrder(b, sizes, total);
        int shortWrites = count - count / 100;
        Reader r = awaitReader();
        // The route was taken (both ways of asking), and the reader got fewer buffers than there were writes.
        assertTrue(direct[0] > 0 && direct[1] > 0, () -> "sent at once: " + Arrays.toString(direct));
        assertTrue(r.reads < shortWrites, () -> r.reads + " buffers came up for " + count + " writes");
    }

    /**
     * The buffer short writes are gathered into is used again for the next read batch only when the reader let it go:
     * a reader that keeps every third buffer (reads 0, 3, 6, ...) finds each kept one as it came, and never sees it
     * come up again, while the ones it released come back. One write at a time first (a batch each; every 50th over
     * the kept buffer's room, so a new one is taken), then a burst of short writes and one flush (gathered into a
     * kept buffer, grown past it).
     */
    @ParameterizedTest(name = "{0}")
    @CsvSource({"shm", "self", "tcp"})
    void aGatheredBufferTheReaderKeepsIsNeverWrittenAgain(String tls) throws Exception {
        List<ByteBuf> came = new ArrayList<>();
        List<ByteBuf> kept = new ArrayList<>();
        List<byte[]> keptAs = new ArrayList<>();
        ByteBuf received = Unpooled.buffer();
        AtomicLong arrived = new AtomicLong();
        List<Throwable> caught = new CopyOnWriteArrayList<>();
        ChannelInitializer<Endpoint> keeper = readingWith(b -> {
            received.writeBytes(b, b.readerIndex(), b.readableBytes());
            if (came.size() % 3 == 0) {
                kept.add(b);
                keptAs.add(ByteBufUtil.getBytes(b));
            } else {
                b.release();
            }
            came.add(b);
            arrived.set(received.writerIndex());
        }, caught);
        DefaultWorker a = workers.start("a", "TLS", tls);
        DefaultWorker b = workers.start("b", keeper, "TLS", tls);
        Endpoint ab = a.connect(b.address());
        ab.wireupFuture().sync();
        int oneByOne = 300;
        int count = oneByOne + 200;
        int[] sizes = new int[count];
        long total = 0;
        try {
            for (int i = 0; i < oneByOne; i++) {
                sizes[i] = i % 50 == 49 ? 600 + i : 1 + i % 40;
                total += sizes[i];
                ab.writeAndFlush(new StreamData(content(i, sizes[i], false))).sync();
                long sent = total;
                await(() -> arrived.get() >= sent, "write " + i + "'s bytes");
            }
            List<ChannelFuture> burst = new ArrayList<>();
            for (int i = oneByOne; i < count; i++) {
                sizes[i] = 1 + i % 40;
                total += sizes[i];
                burst.add(ab.write(new StreamData(content(i, sizes[i], false))));
            }
            ab.flush();
            for (ChannelFuture f : burst) {
                assertTrue(f.await(30, TimeUnit.SECONDS) && f.isSuccess(), () -> "stream write: " + f.cause());
            }
            long sent = total;
            await(() -> arrived.get() >= sent, "the burst's bytes");
            b.eventLoop().submit(() -> {
                for (int i = 0, at = 0; i < count; at += sizes[i], i++) {
                    assertContent(i, sizes[i], received.slice(at, sizes[i]));
                }
                for (int k = 0; k < kept.size(); k++) {
                    assertArrayEquals(keptAs.get(k), ByteBufUtil.getBytes(kept.get(k)),
                            "kept buffer " + k + " changed after it came up");
                    assertEquals(3 * k, lastIndexOfIdentity(came, kept.get(k)),
                            "kept buffer " + k + " (read " + 3 * k + ") came up again");
                }
                // Under the tests' paranoid leak detection every pooled buffer is a new wrapper, so a buffer that
                // comes up twice is one the codec kept; at other levels the pool's own recycling would count too.
                if (ResourceLeakDetector.getLevel() == ResourceLeakDetector.Level.PARANOID) {
                    Set<ByteBuf> seen = Collections.newSetFromMap(new IdentityHashMap<>());
                    seen.addAll(came);
                    int distinct = seen.size();
                    assertTrue(distinct < came.size() - kept.size(), () -> came.size() + " buffers came up, "
                            + distinct + " distinct: the released ones were not used again");
                }
            }).get(30, TimeUnit.SECONDS);
            assertTrue(caught.isEmpty(), () -> "caught " + caught);
        } finally {
            b.eventLoop().submit(() -> {
                kept.forEach(ByteBuf::release);
                received.release();
            }).get(30, TimeUnit.SECONDS);
        }
    }

    /**
     * A reader that releases a gathered buffer twice (our reference takes the second release, where a socket's buffer
     * would have thrown in the reader) loses nothing else: the stream goes on, the next writes arrive whole (the
     * codec names the reader in the log).
     */
    @Test
    void aReaderThatReleasesAGatheredBufferTwiceLosesNothingElse() throws Exception {
        ByteBuf received = Unpooled.buffer();
        AtomicLong arrived = new AtomicLong();
        List<Throwable> caught = new CopyOnWriteArrayList<>();
        ChannelInitializer<Endpoint> twiceFirst = readingWith(b -> {
            received.writeBytes(b, b.readerIndex(), b.readableBytes());
            b.release();
            if (arrived.getAndSet(received.writerIndex()) == 0) {
                b.release();
            }
        }, caught);
        DefaultWorker a = workers.start("a", "TLS", "shm");
        DefaultWorker b = workers.start("b", twiceFirst, "TLS", "shm");
        Endpoint ab = a.connect(b.address());
        ab.wireupFuture().sync();
        int[] sizes = {16, 24, 32};
        long total = 0;
        try {
            for (int i = 0; i < sizes.length; i++) {
                total += sizes[i];
                ab.writeAndFlush(new StreamData(content(i, sizes[i], false))).sync();
                long sent = total;
                await(() -> arrived.get() >= sent, "write " + i + "'s bytes");
            }
            b.eventLoop().submit(() -> {
                for (int i = 0, at = 0; i < sizes.length; at += sizes[i], i++) {
                    assertContent(i, sizes[i], received.slice(at, sizes[i]));
                }
            }).get(30, TimeUnit.SECONDS);
            assertTrue(ab.isActive(), "the endpoint is still up");
            assertTrue(caught.isEmpty(), () -> "caught " + caught);
        } finally {
            b.eventLoop().submit(() -> { received.release(); }).get(30, TimeUnit.SECONDS);
        }
    }

    /**
     * Puts a reader into every endpoint's pipeline that hands each ByteBuf to {@code read} (the buffer is then
     * {@code read}'s) and adds what reaches its {@code exceptionCaught} to {@code caught}.
     */
    private static ChannelInitializer<Endpoint> readingWith(Consumer<ByteBuf> read,
                                                           List<Throwable> caught) {
        return new ChannelInitializer<>() {
            @Override
            protected void initChannel(Endpoint ep) {
                ep.pipeline().addLast(new ChannelInboundHandlerAdapter() {
                    @Override
                    public void channelRead(ChannelHandlerContext ctx, Object msg) {
                        read.accept((ByteBuf) msg);
                    }

                    @Override
                    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
                        caught.add(cause);
                    }
                });
            }
        };
    }

    private static int lastIndexOfIdentity(List<ByteBuf> list, ByteBuf b) {
        for (int i = list.size() - 1; i >= 0; i--) {
            if (list.get(i) == b) {
                return i;
            }
        }
        return -1;
    }

    /**
     * The route without the walk is taken only while no handler of the user's takes writes: an outbound handler put
     * between the user's reader and nucx's handlers after writes went that way (where a cached answer would miss
     * it) sees every later write, and {@code trySendStreamShort} declines; once it is gone, the route is back.
     */
    @Test
    void aHandlerOfTheUsersThatTakesWritesSeesEveryStreamWrite() throws Exception {
        DefaultWorker a = workers.start("a", reader(true), "TLS", "shm");
        DefaultWorker b = workers.start("b", reader(true), "TLS", "shm");
        Endpoint ab = a.connect(b.address());
        ab.wireupFuture().sync();
        ByteBuf data = TestWorkers.pattern(1, 16);
        AtomicInteger seen = new AtomicInteger();
        ChannelOutboundHandlerAdapter counter = new ChannelOutboundHandlerAdapter() {
            @Override
            public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
                seen.incrementAndGet();
                ctx.write(msg, promise);
            }
        };
        try {
            await(() -> readers.containsKey(ab), "a's reader");
            String readerName = ab.pipeline().context(readers.get(ab)).name();
            assertTrue(onLoop(a, () -> ab.trySendStreamShort(data)), "a reader takes no writes: the route is open");
            a.eventLoop().submit(() -> ab.pipeline().addBefore(readerName, "counter", counter)).get();
            assertTrue(!onLoop(a, () -> ab.trySendStreamShort(data)), "a handler that takes writes closes the route");
            for (int i = 0; i < 5; i++) {
                ChannelFuture f = a.eventLoop().submit(() -> ab.writeAndFlush(
                        new StreamData(data.retainedDuplicate()))).get();
                assertTrue(f.await(30, TimeUnit.SECONDS) && f.isSuccess(), () -> "write: " + f.cause());
            }
            assertEquals(5, seen.get(), "writes the user's outbound handler saw");
            a.eventLoop().submit(() -> ab.pipeline().remove(counter)).get();
            assertTrue(onLoop(a, () -> ab.trySendStreamShort(data)), "the route is back once it is gone");
            onLoop(a, () -> ab.flush() != null);
            Reader r = readers.entrySet().stream().filter(e -> e.getKey() != ab).map(Map.Entry::getValue)
                    .findFirst().orElseThrow();
            await(() -> r.bytes == 7 * 16, "the 7 writes' bytes at b");
        } finally {
            data.release();
        }
    }

    /**
     * A reader with auto-read off stops the writer: once a window is out, further writes wait at the writer (its
     * endpoint unwritable) and the reader holds at most a window plus one write; each {@code read()} then lets more
     * through, until everything arrived in order.
     */
    @ParameterizedTest(name = "{0}")
    @CsvSource({"tcp", "shm"})
    void aReaderThatDoesNotReadStopsTheWriterAfterOneWindow(String tls) throws Exception {
        DefaultWorker a = workers.start("a", "TLS", tls);
        DefaultWorker b = workers.start("b", reader(false), "TLS", tls);
        Endpoint ab = a.connect(b.address());
        int write = 256 << 10;
        int count = 3 * StreamCodec.WINDOW / write;
        List<ChannelFuture> sends = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            sends.add(ab.streamSend(content(i, write, true)));
        }
        Reader r = awaitReader();
        Endpoint ba = r.ctx.channel() instanceof Endpoint e ? e : null;
        StreamCodec sender = TestWorkers.impl(ab).pipeline().get(StreamCodec.class);
        StreamCodec receiver = TestWorkers.impl(ba).pipeline().get(StreamCodec.class);
        // The writer runs out of credit: the rest wait at the writer, which turns unwritable.
        await(() -> onLoop(a, () -> sender.waitingWrites() > 0 && !ab.isWritable()), "writes waiting for credit");
        assertEquals(0, r.bytes, "nothing may be delivered without a read()");
        int held = b.eventLoop().submit(receiver::undelivered).get();
        assertTrue((long) held * write <= StreamCodec.WINDOW + write, () -> "the reader holds " + held + " writes");
        readAll(b, ba, r, sends, count, write);
        assertTrue(onLoop(a, ab::isWritable), "writable again once the reader caught up");
    }

    /**
     * Short writes a reader with auto-read off has not asked for wait for its {@code read()}s, gathered (over shm their
     * records are copied out of the ring as they arrive, several writes to a buffer), while the writer runs out of
     * credit after a window; every byte then comes in order, in fewer buffers than writes.
     */
    @Test
    void shortWritesGatheredForAReaderThatDoesNotReadWaitForItsReads() throws Exception {
        DefaultWorker a = workers.start("a", "TLS", "shm");
        DefaultWorker b = workers.start("b", reader(false), "TLS", "shm");
        Endpoint ab = a.connect(b.address());
        int write = 200;
        int count = 3 * StreamCodec.WINDOW / 2 / write;
        List<ChannelFuture> sends = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            sends.add(ab.streamSend(content(i, write, i % 2 == 0)));
        }
        Reader r = awaitReader();
        Endpoint ba = r.ctx.channel() instanceof Endpoint e ? e : null;
        StreamCodec sender = TestWorkers.impl(ab).pipeline().get(StreamCodec.class);
        await(() -> onLoop(a, () -> sender.waitingWrites() > 0), "writes waiting for credit");
        assertEquals(0, r.bytes, "nothing may be delivered without a read()");
        readAll(b, ba, r, sends, count, write);
        assertTrue(r.reads < count / 2, () -> r.reads + " buffers came up for " + count + " short writes");
    }

    /**
     * Auto-read turned off between batches withdraws the read auto-read had asked for, as a socket channel clears its
     * pending read: what arrives after waits for a {@code read()}. (The read stayed asked, and the next batch came up
     * with auto-read off. Found by NucxChannelRandomTest.)
     */
    @ParameterizedTest(name = "{0}")
    @CsvSource({"self", "shm", "tcp"})
    void autoReadTurnedOffBetweenBatchesWithdrawsTheReadItHadAsked(String tls) throws Exception {
        DefaultWorker a = workers.start("a", "TLS", tls);
        DefaultWorker b = workers.start("b", reader(true), "TLS", tls);
        Endpoint ab = a.connect(b.address());
        assertTrue(ab.streamSend(content(1, 100, true)).await(10, TimeUnit.SECONDS));
        Reader r = awaitReader();
        await(() -> r.bytes == 100, "the first write, read by auto-read");
        Endpoint ba = (Endpoint) r.ctx.channel();
        b.eventLoop().submit(() -> ba.config().setAutoRead(false)).get(10, TimeUnit.SECONDS);
        assertTrue(ab.streamSend(content(2, 100, true)).await(10, TimeUnit.SECONDS));
        StreamCodec receiver = TestWorkers.impl(ba).pipeline().get(StreamCodec.class);
        await(() -> r.bytes > 100 || onLoop(b, () -> receiver.undelivered() > 0),
                "the second write at the reader's endpoint");
        assertEquals(100, r.bytes, "nothing more may come up without a read()");
        b.eventLoop().execute(ba::read);
        await(() -> r.bytes == 200, "the second write, once read() asked for it");
    }

    /**
     * The end of the stream arrives after its last byte, even when the last write is a rendezvous still being read;
     * a write after the end fails naming why.
     */
    @Test
    void theEndComesAfterTheLastByteAndNothingMayFollowIt() throws Exception {
        DefaultWorker a = workers.start("a", "TLS", "shm");
        DefaultWorker b = workers.start("b", reader(true), "TLS", "shm");
        Endpoint ab = a.connect(b.address());
        ab.streamSend(content(0, 100, false));
        ab.streamSend(content(1, 6 << 20, true));
        ab.writeAndFlush(StreamData.end()).sync();
        ChannelFuture after = ab.streamSend(content(2, 10, false));
        assertTrue(after.await(10, TimeUnit.SECONDS));
        assertTrue(after.cause() instanceof ChannelOutputShutdownException,
                () -> "write after the end: " + after.cause());
        Reader r = awaitReader();
        assertTrue(r.ended.await(30, TimeUnit.SECONDS), "no end of stream");
        assertEquals(100 + (6 << 20), r.endedAt, "the end came before the last byte");
    }

    /**
     * A close right after the writes, to a reader that does not read: the close waits for the reader (within the
     * close bound), and once it reads, every byte and then the end arrive before the endpoints close.
     */
    @Test
    void aCloseLosesNothingThePeerStillReads() throws Exception {
        DefaultWorker a = workers.start("a", "TLS", "tcp");
        DefaultWorker b = workers.start("b", reader(false), "TLS", "tcp");
        Endpoint ab = a.connect(b.address());
        int n = 20;
        int write = 300_000;
        for (int i = 0; i < n; i++) {
            ab.streamSend(content(i, write, false));
        }
        ChannelFuture closed = ab.close();
        Reader r = awaitReader();
        Endpoint ba = (Endpoint) r.ctx.channel();
        await(() -> onLoop(a, () -> TestWorkers.impl(ab).state() == EndpointLifecycle.State.DRAINING
                || TestWorkers.impl(ab).pipeline().get(StreamCodec.class).waitingWrites() > 0),
                "the close waiting for the reader");
        assertFalse(closed.isDone(), "the close did not wait for the reader");
        b.eventLoop().submit(() -> ba.config().setAutoRead(true)).get();
        assertTrue(r.ended.await(30, TimeUnit.SECONDS), "no end of stream");
        assertEquals((long) n * write, r.endedAt);
        assertTrue(closed.await(30, TimeUnit.SECONDS) && closed.isSuccess(), () -> "close: " + closed.cause());
        b.eventLoop().submit(() -> {
            for (int i = 0; i < n; i++) {
                assertContent(i, write, r.received.slice(i * write, write));
            }
        }).get(30, TimeUnit.SECONDS);
    }

    private static boolean onLoop(DefaultWorker w, BooleanSupplier check) {
        try {
            return w.eventLoop().submit(check::getAsBoolean).get(10, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    /**
     * Calls {@code read()} on the reader's endpoint {@code ba} (each one a batch) until all {@code count} writes of
     * {@code write} bytes came, then checks that every write completed and that they came in order.
     */
    private static void readAll(DefaultWorker b, Endpoint ba, Reader r, List<ChannelFuture> sends, int count,
                                int write) throws Exception {
        long total = (long) count * write;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (r.bytes < total) {
            assertTrue(System.nanoTime() < deadline, () -> "stuck at " + r.bytes + " of " + total);
            b.eventLoop().submit(() -> ba.read()).get();
            Thread.sleep(2);
        }
        for (ChannelFuture f : sends) {
            assertTrue(f.await(30, TimeUnit.SECONDS) && f.isSuccess(), () -> "write: " + f.cause());
        }
        b.eventLoop().submit(() -> {
            for (int i = 0; i < count; i++) {
                assertContent(i, write, r.received.slice(i * write, write));
            }
        }).get(30, TimeUnit.SECONDS);
    }

    /** The peer's reader got all {@code total} bytes: write i's {@code sizes[i]} after write i - 1's, nothing else. */
    private void awaitInOrder(DefaultWorker b, int[] sizes, long total) throws Exception {
        Reader r = awaitReader();
        await(() -> r.bytes >= total, "all " + total + " stream bytes");
        b.eventLoop().submit(() -> {
            for (int i = 0, at = 0; i < sizes.length; at += sizes[i], i++) {
                assertContent(i, sizes[i], r.received.slice(at, sizes[i]));
            }
        }).get(30, TimeUnit.SECONDS);
        assertTrue(r.strays.isEmpty(), () -> "not bytes: " + r.strays);
    }

    private static void await(BooleanSupplier done, String what) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!done.getAsBoolean()) {
            assertTrue(System.nanoTime() < deadline, () -> "timed out waiting for " + what);
            Thread.sleep(5);
        }
    }

    private static ByteBuf content(long seed, int length, boolean direct) {
        return direct ? TestWorkers.directPattern(seed, length) : TestWorkers.pattern(seed, length);
    }

    private static void assertContent(long seed, int length, ByteBuf actual) {
        byte[] expected = new byte[length];
        new SplittableRandom(seed).nextBytes(expected);
        byte[] got = new byte[length];
        actual.getBytes(actual.readerIndex(), got);
        int at = Arrays.mismatch(expected, got);
        assertTrue(at < 0, () -> "write " + seed + " (" + length + " B) differs at byte " + at);
    }
}
