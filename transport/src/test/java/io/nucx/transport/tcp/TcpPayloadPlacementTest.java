package io.nucx.transport.tcp;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.handler.codec.CorruptedFrameException;
import io.netty.handler.codec.TooLongFrameException;
import io.nucx.transport.AbstractIface;
import io.nucx.transport.AmFrame;
import io.nucx.transport.Iface;
import io.nucx.transport.IfaceParams;
import io.nucx.transport.IoEngine;
import io.nucx.transport.NucxConfig;
import io.nucx.transport.PayloadPlacement;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Large payloads read from the socket straight into where the receiving handler says they go
 * ({@link PayloadPlacement}), on real tcp lanes over every engine: interleaved with small frames and with large ones
 * it does not place, everything arrives in order and intact, a placed payload is the handler's memory itself, and
 * most of its bytes came from the socket without a copy; a connection cut in the middle of a placed payload reports
 * the broken frame and releases the buffer (the leak detector runs at PARANOID).
 */
@Timeout(120)
class TcpPayloadPlacementTest {

    private static final int PLACED = 10;
    private static final int SMALL = 11;
    private static final int UNPLACED = 12;
    private static final int LARGE = 60_000;
    private static final int ROUNDS = 10;
    /** Placed frames per round, back to back (a large message's fragments). */
    private static final int RUN = 4;

    /** The receiving end's handler: places PLACED payloads at the offset their header names in one region. */
    private static final class PlacingReceiver extends ChannelInboundHandlerAdapter implements PayloadPlacement {
        final ByteBuf region = PooledByteBufAllocator.DEFAULT.directBuffer(ROUNDS * RUN * LARGE,
                ROUNDS * RUN * LARGE);
        final BlockingQueue<AmFrame> frames = new LinkedBlockingQueue<>();
        final BlockingQueue<Throwable> errors = new LinkedBlockingQueue<>();
        final CompletableFuture<Channel> channel = new CompletableFuture<>();
        int placements;
        /** The offsets placed into (the frames whose payload had not all arrived with their header). */
        final Set<Long> placedAt = ConcurrentHashMap.newKeySet();

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            channel.complete(ctx.channel());
            ctx.fireChannelActive();
        }

        @Override
        public ByteBuf placePayload(int amId, ByteBuf header, int length) {
            if (amId != PLACED) {
                return null;
            }
            placements++;
            long at = header.getLongLE(header.readerIndex());
            placedAt.add(at);
            return region.retainedSlice((int) at, length).clear();
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            frames.add((AmFrame) msg);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            errors.add(cause);
        }
    }

    private final List<EventLoopGroup> groups = new ArrayList<>();
    private final List<Iface> ifaces = new ArrayList<>();
    private final List<PlacingReceiver> receivers = new ArrayList<>();

    @AfterEach
    void close() throws Exception {
        for (Iface i : ifaces) {
            i.close().await(10, TimeUnit.SECONDS);
        }
        for (EventLoopGroup g : groups) {
            g.shutdownGracefully(0, 1, TimeUnit.SECONDS).await(10, TimeUnit.SECONDS);
        }
        for (PlacingReceiver r : receivers) {
            for (AmFrame f; (f = r.frames.poll()) != null; ) {
                f.release();
            }
            r.region.release();
        }
    }

    private Iface open(IoEngine engine, String place, PlacingReceiver accepted) throws Exception {
        EventLoopGroup g = new MultiThreadIoEventLoopGroup(1, engine.ioHandlerFactory());
        groups.add(g);
        TcpTransport t = new TcpTransport();
        NucxConfig config = NucxConfig.of(Map.of("NUCX_TCP_PLACE", place), Map.of());
        Iface i = t.openIface(new IfaceParams(g.next(), t.defaultDevice(config),
                () -> accepted != null ? accepted : new ChannelInboundHandlerAdapter(), config));
        ifaces.add(i);
        return i;
    }

    private PlacingReceiver receiver() {
        PlacingReceiver r = new PlacingReceiver();
        receivers.add(r);
        return r;
    }

    private static ByteBuf pattern(int seed, int n) {
        byte[] bytes = new byte[n];
        for (int i = 0; i < n; i++) {
            bytes[i] = (byte) (seed * 31 + i * 7);
        }
        return Unpooled.directBuffer(n).writeBytes(bytes);
    }

    private static AmFrame frame(int amId, long header, int seed, int n) {
        return AmFrame.of(amId, 0, Unpooled.buffer(8).writeLongLE(header), pattern(seed, n));
    }

    /** One bulk comparison: the leak detector records every access of a buffer under test, byte by byte is slow. */
    private static void assertPattern(ByteBuf b, int seed, int n, String what) {
        assertEquals(n, b.readableBytes(), what + ": length");
        ByteBuf expected = pattern(seed, n);
        try {
            assertTrue(ByteBufUtil.equals(expected, 0, b, b.readerIndex(), n), what + ": bytes differ");
        } finally {
            expected.release();
        }
    }

    @ParameterizedTest(name = "{0}, NUCX_TCP_PLACE={1}")
    @CsvSource({"IO_URING, y", "EPOLL, y", "NIO, y", "EPOLL, n"})
    void largePayloadsGoStraightWhereTheReceiverSaysAndEverythingArrivesInOrder(IoEngine engine, String setting)
            throws Exception {
        // io_uring's reads wait in the kernel with their buffer: no placing there (PlacingRecvAllocator).
        String place = engine == IoEngine.IO_URING ? "n" : setting;
        assumeTrue(engine.availability().isAvailable(), () -> engine.availability().reason());
        PlacingReceiver r = receiver();
        Iface b = open(engine, setting, r);
        Iface a = open(engine, setting, null);
        Channel ch = ((AbstractIface) a).eventLoop().submit(() ->
                a.connect(b.deviceAddress(), b.ifaceAddress(), new ChannelInboundHandlerAdapter())).get()
                .sync().channel();
        Channel accepted = r.channel.get(10, TimeUnit.SECONDS);
        ChannelFuture last = null;
        for (int i = 0; i < ROUNDS; i++) {
            for (int k = 0; k < RUN; k++) {
                ch.write(frame(PLACED, (long) (i * RUN + k) * LARGE, i * RUN + k, LARGE));
            }
            ch.write(frame(SMALL, i, i, 100));
            last = ch.writeAndFlush(frame(UNPLACED, i, i, LARGE - 1000));
        }
        assertTrue(last.await(30, TimeUnit.SECONDS) && last.isSuccess(), () -> "writes: " + ch);
        for (int i = 0; i < ROUNDS; i++) {
            for (int k = 0; k < RUN + 2; k++) {
                int amId = k < RUN ? PLACED : k == RUN ? SMALL : UNPLACED;
                int seed = amId == PLACED ? i * RUN + k : i;
                AmFrame f = r.frames.poll(30, TimeUnit.SECONDS);
                assertNotNull(f, "frame " + k + " of round " + i + " did not arrive");
                try {
                    assertEquals(amId, f.amId(), "round " + i + ", frame " + k + ": order");
                    int n = amId == PLACED ? LARGE : amId == SMALL ? 100 : LARGE - 1000;
                    assertPattern(f.payload(), seed, n, "am " + amId + " round " + i + " frame " + k);
                    long at = (long) seed * LARGE;
                    if (amId == PLACED && r.placedAt.contains(at)) {
                        assertEquals(r.region.memoryAddress() + at, f.payload().memoryAddress()
                                + f.payload().readerIndex(), "the placed payload at " + at + " is the receiver's");
                        assertPattern(r.region.slice((int) at, LARGE), seed, LARGE, "region at " + at);
                    }
                } finally {
                    f.release();
                }
            }
        }
        AmFrameDecoder decoder = accepted.pipeline().get(AmFrameDecoder.class);
        long placed = accepted.eventLoop().submit(decoder::placedBytes).get();
        if (place.equals("y")) {
            // Each placed frame's first read may bring some of its payload (copied); the rest comes from the socket.
            // A frame is placed when its header arrives before all of its payload: after a placed one, the lane
            // reads small, so a run of large frames is placed from its second frame on, mostly from the socket.
            assertTrue(r.placements >= ROUNDS, () -> r.placements + " placements in " + ROUNDS + " runs of " + RUN);
            assertTrue(placed > (long) ROUNDS * LARGE, () -> "only " + placed + " bytes of " + r.placements
                    + " placed payloads came straight from the socket");
        } else {
            assertEquals(0, placed, "NUCX_TCP_PLACE=" + setting + " on " + engine);
            assertEquals(0, r.placements, "NUCX_TCP_PLACE=" + setting + " on " + engine + " asks no one");
        }
        assertTrue(r.errors.isEmpty(), () -> "errors: " + r.errors);
    }

    /**
     * A short frame and a 64 KiB one after it (a Netty app's head and body), written at once and all in the socket
     * when the lane reads: one read takes both, the large one whole. Netty's reads stopped at 64 KiB, which left the
     * large frame's end for a second read and its payload to be copied out of the first. The first rounds let the
     * lane's adaptive read size grow as a busy lane's does. A large frame whose receiver says where it goes arrives
     * in that memory (copied there from the read), as one read only partly would (the socket writing the rest).
     */
    @ParameterizedTest(name = "{0}, placed {1}")
    @CsvSource({"EPOLL, false", "NIO, false", "EPOLL, true", "NIO, true"})
    void aWholeFrameOf64KiBAndTheFrameBeforeItAreTakenInOneRead(IoEngine engine, boolean placed) throws Exception {
        PlacingPair p = placingPair(engine);
        Channel accepted = p.receiver().channel.get(10, TimeUnit.SECONDS);
        AtomicInteger reads = new AtomicInteger();
        accepted.eventLoop().submit(() -> accepted.pipeline().addFirst("readCounter",
                new ChannelInboundHandlerAdapter() {
                    @Override
                    public void channelRead(ChannelHandlerContext ctx, Object msg) {
                        reads.incrementAndGet();
                        ctx.fireChannelRead(msg);
                    }
                })).sync();
        int rounds = 10;
        int body = 64 * 1024;
        List<Integer> readsPerRound = new ArrayList<>();
        for (int i = 0; i < rounds; i++) {
            // The receiving loop waits while the round is written, so the whole round is in its socket when it reads.
            CountDownLatch written = new CountDownLatch(1);
            accepted.eventLoop().execute(() -> {
                try {
                    written.await(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            int before = reads.get();
            p.sender().write(frame(SMALL, i, i, 100));
            int at = i * body;
            ChannelFuture w = p.sender().writeAndFlush(placed ? frame(PLACED, at, i, body) : frame(UNPLACED, i, i,
                    body));
            assertTrue(w.await(10, TimeUnit.SECONDS) && w.isSuccess(), () -> "round written: " + w.cause());
            written.countDown();
            for (int k = 0; k < 2; k++) {
                AmFrame f = p.receiver().frames.poll(10, TimeUnit.SECONDS);
                assertNotNull(f, "frame " + k + " of round " + i + " did not arrive");
                try {
                    assertEquals(k == 0 ? SMALL : placed ? PLACED : UNPLACED, f.amId(), "round " + i + ", frame "
                            + k + ": order");
                    assertPattern(f.payload(), i, k == 0 ? 100 : body, "round " + i + ", frame " + k);
                    if (k == 1 && placed) {
                        assertEquals(p.receiver().region.memoryAddress() + at, f.payload().memoryAddress()
                                + f.payload().readerIndex(), "round " + i + ": the payload is the receiver's memory");
                    }
                } finally {
                    f.release();
                }
            }
            readsPerRound.add(reads.get() - before);
        }
        assertEquals(List.of(1, 1, 1, 1), readsPerRound.subList(rounds - 4, rounds),
                () -> "reads per round on " + engine + ": " + readsPerRound);
        if (placed) {
            assertEquals(rounds, p.receiver().placements, "every 64 KiB payload was placed");
        }
        assertTrue(p.receiver().errors.isEmpty(), () -> "errors: " + p.receiver().errors);
    }

    /** A PLACED frame's prefix, header and the first {@code n} bytes of its payload, as raw bytes. */
    private static ByteBuf placedFrameStart(int n) {
        ByteBuf raw = Unpooled.directBuffer();
        raw.writeByte(PLACED).writeByte(0).writeShortLE(8).writeIntLE(LARGE).writeLongLE(0);
        ByteBuf part = pattern(0, LARGE);
        raw.writeBytes(part, 0, n);
        part.release();
        return raw;
    }

    /** A placing receiver's iface and a placing sender's lane to it, on {@code engine}. */
    private record PlacingPair(Iface from, Channel sender, PlacingReceiver receiver) {
    }

    private PlacingPair placingPair(IoEngine engine) throws Exception {
        assumeTrue(engine.availability().isAvailable(), () -> engine.availability().reason());
        PlacingReceiver r = receiver();
        Iface b = open(engine, "y", r);
        Iface a = open(engine, "y", null);
        return new PlacingPair(a, connected(a, b, r), r);
    }

    private Channel connected(Iface a, Iface b, PlacingReceiver r) throws Exception {
        Channel ch = ((AbstractIface) a).eventLoop().submit(() ->
                a.connect(b.deviceAddress(), b.ifaceAddress(), new ChannelInboundHandlerAdapter())).get()
                .sync().channel();
        r.channel.get(10, TimeUnit.SECONDS);
        return ch;
    }

    /**
     * {@link PayloadPlacement#RELINQUISH} in the middle of a placed payload (an endpoint failing the receive that owns
     * the memory): not a byte more goes into that memory, and the frame still arrives whole, from a buffer of the
     * lane's own.
     */
    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"EPOLL", "NIO"})
    void aRelinquishedPlacementTouchesTheMemoryNoMoreAndTheFrameStillArrivesWhole(IoEngine engine) throws Exception {
        PlacingPair p = placingPair(engine);
        PlacingReceiver r = p.receiver();
        Channel ch = p.sender();
        Channel accepted = r.channel.get();
        int first = LARGE / 3;
        assertTrue(ch.writeAndFlush(placedFrameStart(first)).await(10, TimeUnit.SECONDS));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (accepted.eventLoop().submit(() -> r.placements == 1 && r.region.getByte(first - 1)
                == (byte) ((first - 1) * 7)).get() != Boolean.TRUE) {
            assertTrue(System.nanoTime() < deadline, "the first part was never placed");
            Thread.sleep(5);
        }
        accepted.eventLoop().submit(() -> {
            accepted.pipeline().fireUserEventTriggered(PayloadPlacement.RELINQUISH);
            r.region.setZero(0, r.region.capacity()); // the owner has its memory back and reuses it
        }).get();
        ByteBuf rest = pattern(0, LARGE);
        assertTrue(ch.writeAndFlush(rest.retainedSlice(first, LARGE - first)).await(10, TimeUnit.SECONDS));
        rest.release();
        AmFrame f = r.frames.poll(30, TimeUnit.SECONDS);
        assertNotNull(f, "the frame did not arrive");
        try {
            assertPattern(f.payload(), 0, LARGE, "the relinquished frame");
            assertTrue(f.payload().memoryAddress() != r.region.memoryAddress(), "its payload is the lane's own");
        } finally {
            f.release();
        }
        byte[] region = new byte[LARGE];
        r.region.getBytes(0, region);
        assertEquals(-1, Arrays.mismatch(region, new byte[LARGE]), "nothing was written after RELINQUISH");
        assertTrue(r.errors.isEmpty(), () -> "errors: " + r.errors);
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"EPOLL", "NIO"})
    void aConnectionCutInThePlacedPayloadReportsTheBrokenFrameAndReleasesItsBuffer(IoEngine engine)
            throws Exception {
        PlacingPair p = placingPair(engine);
        PlacingReceiver r = p.receiver();
        Channel ch = p.sender();
        // Half a PLACED frame, as raw bytes (the encoder passes a ByteBuf through), then the sender goes away.
        assertTrue(ch.writeAndFlush(placedFrameStart(LARGE / 2)).await(10, TimeUnit.SECONDS));
        ch.close().sync();
        Throwable e = r.errors.poll(30, TimeUnit.SECONDS);
        assertInstanceOf(CorruptedFrameException.class, e);
        assertTrue(e.getMessage().contains("closed in the middle of a frame"), e.getMessage());
        assertEquals(1, r.placements, "the frame was placed before the cut");
        assertTrue(r.frames.isEmpty(), "no frame went up");
    }

    /**
     * A frame flagged {@link AmFrame#FLAG_PLACED} may be far over the lane's payload limit (a whole rendezvous as one
     * frame, as UCT tcp's PUT_ZCOPY): it goes straight into the memory the receiver gives, from the socket. Over the
     * limit it is refused unless it is placed: unflagged, the sender's own lane fails the write; flagged from a lane
     * that does not place, likewise; flagged and nothing here asks for it, the receiver reports an error naming it
     * and hands nothing up.
     */
    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"EPOLL", "NIO"})
    void aPlacedFrameMayExceedThePayloadLimitAndOneNobodyPlacesIsRefused(IoEngine engine) throws Exception {
        PlacingPair p = placingPair(engine);
        PlacingReceiver r = p.receiver();
        Channel ch = p.sender();
        Channel accepted = r.channel.get();
        // the largest placed frame a lane sends: twice the payload limit at the default 128 KiB segment
        int big = p.from().attributes().maxPlaced() - 8;
        assertTrue(big > p.from().attributes().maxBcopy() * 3L / 2, "the test's frame is far over the limit");
        assertTrue(big <= r.region.capacity());

        ChannelFuture unflagged = ch.writeAndFlush(frame(PLACED, 0, 1, big)).await();
        assertInstanceOf(TooLongFrameException.class, unflagged.cause(),
                "an unflagged frame over the limit fails its write at the sender");
        ChannelFuture tooBig = ch.writeAndFlush(AmFrame.of(PLACED, AmFrame.FLAG_PLACED,
                Unpooled.buffer(8).writeLongLE(0), pattern(1, big + 1))).await();
        assertInstanceOf(TooLongFrameException.class, tooBig.cause(),
                "a placed frame over maxPlaced fails its write at the sender");

        ChannelFuture sent = ch.writeAndFlush(AmFrame.of(PLACED, AmFrame.FLAG_PLACED,
                Unpooled.buffer(8).writeLongLE(0), pattern(2, big)));
        AmFrame f = r.frames.poll(30, TimeUnit.SECONDS);
        assertNotNull(f, "the placed frame did not arrive");
        try {
            assertEquals(AmFrame.FLAG_PLACED, f.flags());
            assertPattern(f.payload(), 2, big, "the placed frame");
            assertEquals(r.region.memoryAddress(), f.payload().memoryAddress() + f.payload().readerIndex(),
                    "its payload is the receiver's memory");
        } finally {
            f.release();
        }
        // The receiver may have all of it before the sender's loop has completed the write.
        assertTrue(sent.await(10, TimeUnit.SECONDS) && sent.isSuccess(), () -> "write: " + sent.cause());
        long placed = accepted.eventLoop().submit(accepted.pipeline().get(AmFrameDecoder.class)::placedBytes).get();
        // The read that brought the header may have brought some payload too (copied); the rest came from the socket.
        assertTrue(placed >= big - 65536, () -> "only " + placed + " of " + big + " bytes came straight from the socket");

        // A lane that does not place sends no placed frame over its limit.
        Iface plain = open(engine, "n", null);
        PlacingReceiver other = receiver();
        Channel fromPlain = connected(plain, open(engine, "y", other), other);
        ChannelFuture refusedAtSender = fromPlain.writeAndFlush(AmFrame.of(PLACED, AmFrame.FLAG_PLACED,
                Unpooled.buffer(8).writeLongLE(0), pattern(3, big))).await();
        assertInstanceOf(TooLongFrameException.class, refusedAtSender.cause(),
                "NUCX_TCP_PLACE=n: no placed frames over the limit");

        // Flagged, but nothing asks for it: refused with the reason (the lane's handler closes that connection).
        ch.writeAndFlush(AmFrame.of(UNPLACED, AmFrame.FLAG_PLACED, Unpooled.buffer(8).writeLongLE(0),
                pattern(4, big)));
        Throwable e = r.errors.poll(30, TimeUnit.SECONDS);
        assertInstanceOf(TooLongFrameException.class, e);
        assertTrue(e.getMessage().contains("placed frame payload length " + big + " exceeds limit")
                && e.getMessage().contains("nothing here asked for it (am id " + UNPLACED + ")"), e.getMessage());
        assertTrue(r.frames.isEmpty(), "no frame went up");
    }
}
