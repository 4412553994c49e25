package io.nucx.transport.tcp;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.CorruptedFrameException;
import io.netty.handler.codec.DecoderException;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SslProvider;
import io.nucx.transport.AmFrame;
import io.nucx.transport.Device;
import io.nucx.transport.IfaceAttributes;
import io.nucx.transport.PayloadPlacement;
import io.nucx.transport.ShortFrameHandler;
import io.nucx.transport.ShortPayload;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link AmFrameEncoder} into {@link AmFrameDecoder}, randomized: streams of frames of every size class (empty, one
 * byte, around {@link AmFrameDecoder#COPY_PAYLOAD}, around {@link AmFrameDecoder#SHORT_PAYLOAD}, around
 * {@link AmFrameDecoder#PLACE_FROM}, at the payload limit, placed frames over it), written as short frames
 * ({@link AmFrameEncoder#writeShort}) and as {@link AmFrame}s with random flushes, then read in reads split anywhere
 * (inside a prefix, at a frame's end, inside a short frame, inside a placed payload), with the lane's handler taking a
 * random share per turn, taking short frames as their parts or not, and placing large payloads into direct or heap
 * buffers of its own or not; the reads come as {@link PlacingRecvAllocator} makes them (into the decoder's
 * {@link AmFrameDecoder#nextRead} buffer when it gives one). Plain, placing, and right behind TLS's record layer.
 * Some streams are cut anywhere and the channel closed at any point of a turn. Every frame's id, flags, header,
 * payload and order is checked, every buffer handed out is released exactly once. Each stream's seed is in every
 * message; {@code -Dtest.framing.seed=N} replays from N.
 */
@Timeout(60)
class FramingRandomizedTest {

    private static final int MAX_HEADER = TcpIface.MAX_HEADER;
    /** The lane's segment: the decoder's payload limit and the encoder's max bcopy. */
    private static final int SEG = 64 * 1024;
    private static final int MAX_PLACED = TcpIface.maxPlacedFrame(SEG);
    private static final long RUN_NANOS = TimeUnit.SECONDS.toNanos(4);
    private static final int MIN_STREAMS = 60;
    private static final AtomicLong SOCKET_PLACED = new AtomicLong();

    private enum Mode { PLAIN, PLACING, TLS }

    /** One frame as written, and how. */
    private record Spec(int amId, int flags, byte[] header, byte[] payload, boolean viaShort) {
        int wireLength() {
            return AmFrameLayout.PREFIX_LENGTH + header.length + payload.length;
        }

        boolean shortShape() {
            return flags == 0 && header.length == Long.BYTES && payload.length <= AmFrameDecoder.SHORT_PAYLOAD;
        }

        @Override
        public String toString() {
            return "am " + amId + " flags 0x" + Integer.toHexString(flags) + " header " + header.length + " B payload "
                    + payload.length + " B" + (viaShort ? " (writeShort)" : "");
        }
    }

    /** What the lane's last handler got. */
    private record Arrival(int amId, int flags, byte[] header, byte[] payload, boolean asParts, boolean placed,
                           boolean closing) {
    }

    /** The lane's last handler: a random share per turn, short frames as parts or not, large payloads placed or not. */
    private static final class Lane extends ChannelInboundHandlerAdapter implements ShortFrameHandler,
            PayloadPlacement {
        final SplittableRandom rnd;
        final String seed;
        final List<Spec> expected;
        final List<Arrival> arrivals = new ArrayList<>();
        final List<Throwable> errors = new ArrayList<>();
        /** This test's own checks that failed inside a callback (Netty reports them as exceptions). */
        final List<AssertionError> failures = new ArrayList<>();
        final List<ByteBuf> targets = new ArrayList<>();
        final List<String> shareOverruns = new ArrayList<>();
        final boolean placing;
        int share = Integer.MAX_VALUE;
        /** Short frames declined one in this many (0: none). */
        int declineOneIn = 4;
        /** Whether a placement that need not be taken is refused at random (else every one is taken). */
        boolean refusePlacements = true;
        int thisTurn;
        int turn;
        boolean closing;
        /** The placed target given for the frame at this arrival index, or null. */
        ByteBuf target;
        int targetFor = -1;
        boolean relinquished;

        Lane(SplittableRandom rnd, String seed, List<Spec> expected, boolean placing) {
            this.rnd = rnd;
            this.seed = seed;
            this.expected = expected;
            this.placing = placing;
        }

        private Spec next(String what) {
            int i = arrivals.size();
            assertTrue(i < expected.size(), seed + ": " + what + " beyond the " + expected.size() + " frames written");
            return expected.get(i);
        }

        @Override
        public boolean shortFrameArrived(int amId, long header, ShortPayload payload) {
            Spec s = next("short frame " + amId);
            if (declineOneIn > 0 && rnd.nextInt(declineOneIn) == 0) {
                return false; // a codec that wants a frame: the decoder makes one
            }
            byte[] got = new byte[payload.length()];
            ByteBuf into = Unpooled.wrappedBuffer(got);
            int how = rnd.nextInt(3);
            if (how == 0 || got.length == 0) {
                payload.copyTo(into, 0);
            } else if (how == 1) {
                int cut = rnd.nextInt(got.length + 1);
                payload.copyTo(0, cut, into, 0);
                payload.copyTo(cut, got.length - cut, into, cut);
            } else {
                int cut = rnd.nextInt(got.length + 1);
                ByteBuf a = payload.copyOut(0, cut);
                ByteBuf b = payload.copyOut(cut, got.length - cut);
                a.getBytes(a.readerIndex(), got, 0, cut);
                b.getBytes(b.readerIndex(), got, cut, got.length - cut);
                a.release();
                b.release();
            }
            byte[] h = new byte[Long.BYTES];
            Unpooled.wrappedBuffer(h).setLongLE(0, header);
            arrive(new Arrival(amId, 0, h, got, true, false, closing), s);
            return true;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            AmFrame f = (AmFrame) msg;
            try {
                Spec s = next("frame " + f.amId());
                int index = arrivals.size();
                boolean placed = index == targetFor;
                if (placed) {
                    if (relinquished) {
                        assertTrue(f.payload() != target, seed + ": frame " + index + " relinquished, still ours");
                    } else {
                        assertSame(target, f.payload(), seed + ": frame " + index + " placed, payload not ours");
                    }
                    targetFor = -1;
                    target = null;
                }
                byte[] h = new byte[f.header().readableBytes()];
                f.header().getBytes(f.header().readerIndex(), h);
                byte[] p = new byte[f.payload().readableBytes()];
                f.payload().getBytes(f.payload().readerIndex(), p);
                arrive(new Arrival(f.amId(), f.flags(), h, p, false, placed, closing), s);
            } finally {
                f.release();
            }
        }

        private void arrive(Arrival a, Spec s) {
            int index = arrivals.size();
            String at = seed + ": frame " + index + " (" + s + ")";
            assertEquals(s.amId(), a.amId(), at + ": am id (order)");
            assertEquals(s.flags(), a.flags(), at + ": flags");
            assertArrayEquals(s.header(), a.header(), at + ": header");
            assertEquals(s.payload().length, a.payload().length, at + ": payload length");
            assertTrue(Arrays.equals(s.payload(), a.payload()), at + ": payload bytes, first difference at "
                    + Arrays.mismatch(s.payload(), a.payload()));
            if (a.asParts()) {
                assertTrue(s.shortShape(), at + ": taken as parts");
            }
            assertTrue(targetFor == -1 || targetFor >= index, at + ": a placement for an earlier frame is pending");
            arrivals.add(a);
            thisTurn++;
            if (!closing && !a.placed() && thisTurn > share) {
                shareOverruns.add("turn " + turn + ": frame " + index + " beyond a share of " + share);
            }
        }

        @Override
        public int turnShareLeft() {
            return Math.max(0, share - thisTurn);
        }

        @Override
        public ByteBuf placePayload(int amId, ByteBuf header, int length) {
            Spec s = next("placement for am " + amId);
            int index = arrivals.size();
            String at = seed + ": placement asked for frame " + index + " (" + s + ")";
            assertTrue(placing, at + " on a lane that does not place");
            assertEquals(s.amId(), amId, at + ": am id");
            assertEquals(s.payload().length, length, at + ": length");
            byte[] h = new byte[header.readableBytes()];
            header.getBytes(header.readerIndex(), h);
            assertArrayEquals(s.header(), h, at + ": header");
            assertTrue(length >= AmFrameDecoder.PLACE_FROM, at + ": a payload below PLACE_FROM");
            assertTrue(targetFor == -1, at + ": frame " + targetFor + " already has a place");
            boolean mustPlace = length > SEG; // a placed frame over the limit: refusing it fails the stream
            int how = rnd.nextInt(3);
            if (how == 0 && !mustPlace && refusePlacements) {
                return null;
            }
            ByteBuf t = how == 2 ? Unpooled.buffer(length, length)
                    : PooledByteBufAllocator.DEFAULT.directBuffer(length, length);
            targets.add(t);
            target = t;
            targetFor = index;
            relinquished = false;
            return t.retain(); // the decoder's reference; ours to check it is released at the end
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            thisTurn = 0;
            turn++;
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            if (cause instanceof AssertionError || cause.getCause() instanceof AssertionError) {
                failures.add(cause instanceof AssertionError a ? a : (AssertionError) cause.getCause());
            } else {
                errors.add(cause);
            }
        }
    }

    private static IfaceAttributes attributes(boolean place) {
        return TcpIface.attributes(new Device("lo", "network"), SEG, false, place);
    }

    private static int payloadSize(SplittableRandom rnd, int most) {
        int[] around = {0, 1, 2, 7, 8, 9, AmFrameDecoder.COPY_PAYLOAD - 1, AmFrameDecoder.COPY_PAYLOAD,
            AmFrameDecoder.COPY_PAYLOAD + 1, AmFrameDecoder.SHORT_PAYLOAD - 1, AmFrameDecoder.SHORT_PAYLOAD,
            AmFrameDecoder.SHORT_PAYLOAD + 1, AmFrameDecoder.PLACE_FROM - 1, AmFrameDecoder.PLACE_FROM,
            AmFrameDecoder.PLACE_FROM + 1, most - 1, most};
        int n = switch (rnd.nextInt(4)) {
            case 0 -> around[rnd.nextInt(around.length)];
            case 1 -> rnd.nextInt(64);
            case 2 -> rnd.nextInt(AmFrameDecoder.SHORT_PAYLOAD + 2);
            default -> rnd.nextInt(most + 1);
        };
        return Math.max(0, Math.min(n, most));
    }

    private static byte[] bytes(SplittableRandom rnd, int n) {
        byte[] b = new byte[n];
        rnd.nextBytes(b);
        return b;
    }

    private static List<Spec> frames(SplittableRandom rnd, Mode mode) {
        int count = 1 + rnd.nextInt(rnd.nextInt(4) == 0 ? 200 : 30);
        boolean bigPlaced = mode == Mode.PLACING && rnd.nextInt(3) == 0;
        List<Spec> specs = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            int amId = 1 + rnd.nextInt(255);
            int kind = rnd.nextInt(10);
            if (kind < 4) { // a short frame from its parts: up to max bcopy
                int size = rnd.nextInt(5) == 0 ? payloadSize(rnd, SEG - Long.BYTES) : payloadSize(rnd, 300);
                specs.add(new Spec(amId, 0, bytes(rnd, Long.BYTES), bytes(rnd, size), true));
            } else if (kind < 9 || !bigPlaced) {
                int headerLength = switch (rnd.nextInt(4)) {
                    case 0 -> Long.BYTES;
                    case 1 -> 0;
                    case 2 -> MAX_HEADER;
                    default -> rnd.nextInt(MAX_HEADER + 1);
                };
                int flags = rnd.nextInt(3) == 0 ? 0 : rnd.nextInt(256);
                int size = payloadSize(rnd, rnd.nextInt(3) == 0 ? SEG - headerLength : 300);
                specs.add(new Spec(amId, flags, bytes(rnd, headerLength), bytes(rnd, size), false));
            } else { // a placed frame over the payload limit, up to the largest a lane sends
                int headerLength = rnd.nextInt(MAX_HEADER + 1);
                int most = MAX_PLACED - headerLength;
                int size = rnd.nextBoolean() ? most : SEG + 1 + rnd.nextInt(most - SEG);
                specs.add(new Spec(amId, AmFrame.FLAG_PLACED | rnd.nextInt(2), bytes(rnd, headerLength),
                        bytes(rnd, size), false));
            }
        }
        return specs;
    }

    /** The specs written through a real encoder with random flushes; the wire as the socket would take it. */
    private static byte[] encode(SplittableRandom rnd, List<Spec> specs, boolean place, String seed) {
        EmbeddedChannel enc = new EmbeddedChannel(new AmFrameEncoder(attributes(place)));
        ChannelHandlerContext writer = enc.pipeline().context(AmFrameEncoder.class);
        AmFrameEncoder encoder = (AmFrameEncoder) writer.handler();
        ByteArrayOutputStream wire = new ByteArrayOutputStream();
        List<ChannelFuture> writes = new ArrayList<>();
        List<ByteBuf> given = new ArrayList<>();
        for (Spec s : specs) {
            if (s.viaShort()) {
                ByteBuf payload = rnd.nextBoolean() ? Unpooled.wrappedBuffer(s.payload().clone())
                        : PooledByteBufAllocator.DEFAULT.directBuffer(s.payload().length).writeBytes(s.payload());
                try {
                    assertTrue(encoder.writeShort(writer, s.amId(), Unpooled.wrappedBuffer(s.header()).getLongLE(0),
                            payload), seed + ": writeShort refused " + s);
                    assertEquals(s.payload().length, payload.readableBytes(), seed + ": writeShort moved the payload");
                } finally {
                    payload.release();
                }
            } else {
                ByteBuf header = Unpooled.wrappedBuffer(s.header().clone());
                ByteBuf payload = s.payload().length == 0 ? Unpooled.EMPTY_BUFFER : rnd.nextBoolean()
                        ? Unpooled.wrappedBuffer(s.payload().clone())
                        : PooledByteBufAllocator.DEFAULT.directBuffer(s.payload().length).writeBytes(s.payload());
                given.add(payload);
                writes.add(enc.write(AmFrame.of(s.amId(), s.flags(), header, payload)));
            }
            if (rnd.nextInt(6) == 0) {
                enc.flush();
                drain(enc, wire);
            }
        }
        enc.flush();
        drain(enc, wire);
        for (ChannelFuture w : writes) {
            assertTrue(w.isSuccess(), () -> seed + ": a write failed: " + w.cause());
        }
        for (ByteBuf b : given) {
            assertTrue(b == Unpooled.EMPTY_BUFFER || b.refCnt() == 0, seed + ": the encoder kept a payload");
        }
        assertFalse(enc.finish(), seed + ": the encoder left something");
        byte[] out = wire.toByteArray();
        assertEquals(specs.stream().mapToLong(Spec::wireLength).sum(), out.length, seed + ": wire length");
        return out;
    }

    private static void drain(EmbeddedChannel enc, ByteArrayOutputStream wire) {
        for (ByteBuf b; (b = enc.readOutbound()) != null; ) {
            byte[] a = new byte[b.readableBytes()];
            b.getBytes(b.readerIndex(), a);
            wire.writeBytes(a);
            b.release();
        }
    }

    /** How many bytes the next read takes: anywhere, or near the next frame boundary. */
    private static int chunk(SplittableRandom rnd, int pos, long[] ends) {
        int r = rnd.nextInt(10);
        if (r < 3) {
            int i = Arrays.binarySearch(ends, pos + 1L);
            long boundary = ends[i >= 0 ? i : Math.min(-i - 1, ends.length - 1)];
            return (int) Math.max(1, boundary - pos + rnd.nextInt(19) - 9);
        }
        if (r < 5) {
            return 1 + rnd.nextInt(16);
        }
        if (r < 8) {
            return 1 + rnd.nextInt(2048);
        }
        return 1 + rnd.nextInt(70_000);
    }

    @Test
    void randomStreamsSplitAnywhereArriveWholeAndInOrderAndNothingLeaks() throws Exception {
        long base = Long.getLong("test.framing.seed", System.nanoTime());
        System.out.println("FramingRandomizedTest base seed " + base);
        long deadline = System.nanoTime() + RUN_NANOS;
        int streams = 0;
        int cuts = 0;
        SOCKET_PLACED.set(0);
        int[] perMode = new int[Mode.values().length];
        for (; streams < MIN_STREAMS || System.nanoTime() < deadline; streams++) {
            long seed = base + streams;
            SplittableRandom rnd = new SplittableRandom(seed);
            Mode mode = Mode.values()[rnd.nextInt(Mode.values().length)];
            perMode[mode.ordinal()]++;
            cuts += runStream(seed, rnd, mode) ? 1 : 0;
        }
        System.out.println("FramingRandomizedTest: " + streams + " streams (plain, placing, tls: "
                + Arrays.toString(perMode) + "), " + cuts + " cut and closed, " + SOCKET_PLACED.get()
                + " payload bytes read straight into their place");
    }

    /**
     * The case the random streams rarely meet: the turn's share ended right before a large frame of which only the
     * header and some payload had come, and the connection closes (on the loop, as a real channel does: inactive at
     * once, the decoder's next turn skipped) before the next turn. The frame is cut: the lane must hear so, and no one
     * must be asked to place the payload of a frame that can no longer arrive.
     */
    @Test
    void aConnectionClosedWhileAPartialLargeFrameWaitsForTheNextTurnReportsTheCutFrame() throws Exception {
        long seedValue = 7;
        List<Spec> specs = List.of(new Spec(7, 0, new byte[Long.BYTES], new byte[] {1, 2, 3, 4}, true),
                new Spec(9, 0, new byte[Long.BYTES], new byte[30_000], false));
        SplittableRandom rnd = new SplittableRandom(seedValue);
        String seed = "fixed case " + specs;
        byte[] wire = encode(rnd, specs, true, seed);
        Lane lane = new Lane(rnd, seed, specs, true);
        lane.declineOneIn = 0;
        lane.refusePlacements = false; // a lane that would take the payload: so the decoder must not ask
        lane.share = 1;
        AmFrameDecoder decoder = new AmFrameDecoder(MAX_HEADER, SEG, true);
        EmbeddedChannel ch = new EmbeddedChannel(decoder, lane);
        // the short frame, the large one's prefix and header and 1000 bytes of its payload
        int cut = specs.get(0).wireLength() + AmFrameLayout.PREFIX_LENGTH + Long.BYTES + 1000;
        ch.pipeline().fireChannelRead(Unpooled.directBuffer(cut).writeBytes(wire, 0, cut));
        ch.pipeline().fireChannelReadComplete();
        assertFalse(ch.config().isAutoRead(), seed + ": the large frame waits for the next turn");
        lane.closing = true;
        ch.unsafe().close(ch.voidPromise());
        ch.runPendingTasks();
        ch.finishAndReleaseAll();
        try {
            assertEquals(1, lane.arrivals.size(), seed + ": arrivals");
            assertTrue(lane.targets.isEmpty(), seed + ": a placement asked for a frame of a closed connection");
            assertEquals(1, lane.errors.size(), () -> seed + ": errors " + lane.errors);
            Throwable e = lane.errors.get(0);
            Throwable c = e instanceof CorruptedFrameException ? e : e.getCause();
            assertTrue(c instanceof CorruptedFrameException
                    && c.getMessage().contains("closed in the middle of a frame"), () -> seed + ": " + lane.errors);
        } finally {
            lane.targets.forEach(ByteBuf::release); // ours: the decoder released its own
        }
    }

    /** One stream; true when it was cut and closed before its end. */
    private static boolean runStream(long seedValue, SplittableRandom rnd, Mode mode) throws Exception {
        String seed = "seed " + seedValue + " (" + mode + ")";
        List<Spec> specs = frames(rnd, mode);
        seed += " frames " + specs;
        if (seed.length() > 2000) {
            seed = seed.substring(0, 2000) + "...";
        }
        byte[] wire = encode(rnd, specs, mode == Mode.PLACING, seed);
        long[] ends = new long[specs.size()];
        long at = 0;
        for (int i = 0; i < specs.size(); i++) {
            at += specs.get(i).wireLength();
            ends[i] = at;
        }
        boolean placing = mode == Mode.PLACING;
        Lane lane = new Lane(rnd, seed, specs, placing);
        int[] shares = {1, 2, 3, 5, Integer.MAX_VALUE};
        lane.share = shares[rnd.nextInt(shares.length)];
        AmFrameDecoder decoder = new AmFrameDecoder(MAX_HEADER, SEG, placing);
        EmbeddedChannel ch;
        SslHandler tls = null;
        if (mode == Mode.TLS) {
            tls = SslContextBuilder.forClient().sslProvider(SslProvider.JDK).build()
                    .newHandler(ByteBufAllocator.DEFAULT);
            ch = new EmbeddedChannel(tls, decoder, lane);
        } else {
            ch = new EmbeddedChannel(decoder, lane);
        }
        // What TLS's record layer unwrapped comes from its context; else from the socket, the pipeline's head.
        ChannelHandlerContext tlsCtx = tls == null ? null : ch.pipeline().context(tls);
        ChannelPipeline p = ch.pipeline();
        boolean cut = rnd.nextInt(4) == 0;
        int end = wire.length;
        if (cut && wire.length > 0) {
            int frame = rnd.nextInt(specs.size());
            List<Integer> large = new ArrayList<>();
            for (int i = 0; i < specs.size(); i++) {
                if (specs.get(i).payload().length >= AmFrameDecoder.PLACE_FROM) {
                    large.add(i);
                }
            }
            if (placing && !large.isEmpty() && rnd.nextBoolean()) { // inside a payload that may be placed
                frame = large.get(rnd.nextInt(large.size()));
            }
            long start = frame == 0 ? 0 : ends[frame - 1];
            end = (int) switch (rnd.nextInt(4)) {
                case 0 -> start; // at a frame boundary
                case 1 -> Math.min(ends[frame] - 1, start + 1 + rnd.nextInt(AmFrameLayout.PREFIX_LENGTH)); // prefix
                default -> start + rnd.nextLong(ends[frame] - start);
            };
        }
        ByteBufAllocator alloc = PooledByteBufAllocator.DEFAULT;
        int pos = 0;
        int idle = 0;
        try {
            while (pos < end || !ch.config().isAutoRead()) {
                assertTrue(++idle < 100_000, seed + ": no progress at byte " + pos + " of " + end);
                if (!ch.config().isAutoRead()) {
                    ch.runPendingTasks(); // reads paused: only the decoder's next turn goes on
                    continue;
                }
                int reads = 1 + rnd.nextInt(3);
                for (int r = 0; r < reads && pos < end && ch.config().isAutoRead(); r++) {
                    ByteBuf into = placing ? decoder.nextRead(alloc) : null;
                    int n = Math.min(chunk(rnd, pos, ends), end - pos);
                    if (into != null) {
                        if (rnd.nextInt(20) == 0) {
                            into.release(); // a read that brought nothing: Netty releases its buffer
                            continue;
                        }
                        n = Math.min(n, into.writableBytes());
                        assertTrue(n > 0, seed + ": a read buffer without room at byte " + pos);
                    } else {
                        into = rnd.nextBoolean() ? alloc.directBuffer(n) : alloc.heapBuffer(n);
                    }
                    into.writeBytes(wire, pos, n);
                    pos += n;
                    if (tlsCtx != null) {
                        tlsCtx.fireChannelRead(into);
                    } else {
                        p.fireChannelRead(into);
                    }
                    if (placing && lane.targetFor >= 0 && rnd.nextInt(8) == 0) {
                        lane.relinquished = true; // the receive's owner takes its memory back
                        p.fireUserEventTriggered(PayloadPlacement.RELINQUISH);
                    }
                }
                if (cut && pos == end && rnd.nextBoolean()) {
                    break; // closed before the batch ends
                }
                if (tlsCtx != null) {
                    tlsCtx.fireChannelReadComplete();
                } else {
                    p.fireChannelReadComplete();
                }
                if (cut && pos == end && rnd.nextBoolean()) {
                    break; // closed before the next turn
                }
            }
            if (cut) {
                lane.closing = true;
                if (rnd.nextBoolean()) {
                    // As a real channel closes on its loop: inactive at once, its events and the decoder's next turn
                    // run after (EmbeddedChannel.close runs the pending tasks first, with the channel still active).
                    ch.unsafe().close(ch.voidPromise());
                    ch.runPendingTasks();
                } else {
                    ch.close().sync();
                }
            } else {
                ch.runPendingTasks();
            }
            if (!lane.failures.isEmpty()) {
                throw lane.failures.get(0);
            }
            int whole = 0;
            while (whole < ends.length && ends[whole] <= end) {
                whole++;
            }
            final String s = seed;
            final int wholeFrames = whole;
            final int cutAt = end;
            assertEquals(whole, lane.arrivals.size(), () -> s + ": frames arrived of " + wholeFrames + " whole in "
                    + cutAt + " bytes; errors " + lane.errors);
            assertEquals(lane.arrivals.stream().filter(Arrival::asParts).count(), decoder.shortFrames(),
                    seed + ": short frames counted");
            List<Throwable> errors = new ArrayList<>(lane.errors);
            if (mode == Mode.TLS) { // the record layer's handshake, never answered, fails when the channel closes
                errors.removeIf(e -> !(e instanceof CorruptedFrameException)
                        && !(e instanceof DecoderException
                        && e.getCause() instanceof CorruptedFrameException));
            }
            boolean midFrame = end != wire.length && (whole == 0 ? end != 0 : ends[whole - 1] != end);
            if (midFrame) {
                long into = end - (whole == 0 ? 0 : ends[whole - 1]);
                assertEquals(1, errors.size(), () -> s + ": closed " + into + " bytes into frame " + wholeFrames
                        + ", errors " + lane.errors);
                Throwable e = errors.get(0);
                Throwable c = e instanceof CorruptedFrameException ? e : e.getCause();
                assertNotNull(c, seed + ": " + e);
                assertTrue(c instanceof CorruptedFrameException
                        && c.getMessage().contains("closed in the middle of a frame"), seed + ": " + e);
            } else {
                assertTrue(errors.isEmpty(), () -> s + ": errors " + lane.errors);
            }
            if (!cut) {
                assertTrue(ch.config().isAutoRead(), seed + ": reads still paused with nothing left");
                assertFalse(decoder.holdsPeerFrames(), seed + ": the decoder holds frames with nothing left");
            }
            assertTrue(lane.shareOverruns.isEmpty(), () -> s + ": " + lane.shareOverruns);
        } finally {
            SOCKET_PLACED.addAndGet(decoder.placedBytes());
            ch.finishAndReleaseAll();
            List<String> held = new ArrayList<>();
            for (ByteBuf t : new HashSet<>(lane.targets)) {
                if (t.refCnt() != 1) {
                    held.add(t.toString());
                }
                if (t.refCnt() > 0) {
                    t.release(t.refCnt()); // ours, and whatever the decoder failed to release
                }
            }
            assertTrue(held.isEmpty(), seed + ": placed payloads' buffers still held or released twice: " + held);
        }
        return cut;
    }
}
