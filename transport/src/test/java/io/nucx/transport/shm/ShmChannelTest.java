package io.nucx.transport.shm;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.CorruptedFrameException;
import io.nucx.transport.AbstractLaneChannel;
import io.nucx.transport.AmFrame;
import io.nucx.transport.Iface;
import io.nucx.transport.PayloadPlacement;
import io.nucx.transport.ShortFrameHandler;
import io.nucx.transport.ShortPayload;
import io.nucx.transport.testsuite.Frames;
import io.nucx.transport.testsuite.Recorder;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import java.util.stream.LongStream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What only shm does, over real shared memory and Unix sockets in one process: the doorbell that wakes a parked
 * reader, bounded write batches, a corrupt ring or handshake closing one connection only, stale files reaped. What
 * every lane does (order, sizes, backpressure, close, a peer process killed) is {@link ShmLaneTest}'s.
 */
@Timeout(120)
class ShmChannelTest {

    private final ShmIfaces ifaces = new ShmIfaces();
    private final List<Recorder> recorders = new CopyOnWriteArrayList<>();

    @AfterEach
    void tearDown() throws Exception {
        ifaces.close();
        recorders.forEach(Recorder::releaseAll);
    }

    private Iface iface(Supplier<ChannelHandler> accepted) throws Exception {
        return ifaces.open(accepted);
    }

    /** An iface whose accepted lanes report to recorders, listed in {@code accepted} as they come. */
    private Iface recordingIface(List<Recorder> accepted) throws Exception {
        return iface(() -> {
            Recorder r = recorder();
            accepted.add(r);
            return r;
        });
    }

    private Recorder recorder() {
        Recorder r = new Recorder();
        recorders.add(r);
        return r;
    }

    private static void await(BooleanSupplier condition, String what) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(Recorder.DEADLINE_SECONDS);
        while (!condition.getAsBoolean()) {
            assertTrue(System.nanoTime() < deadline, what);
            Thread.onSpinWait();
        }
    }

    /**
     * Both loops idle past their spin time and park (the reader's flag in the ring it reads says so); a frame must
     * still wake the reader: the writer finds the flag and rings the doorbell.
     */
    @Test
    void aFrameWakesAReaderWhoseLoopHasParked() throws Exception {
        List<Recorder> accepted = new CopyOnWriteArrayList<>();
        Iface server = recordingIface(accepted);
        Iface client = iface(this::recorder);
        Recorder mine = recorder();
        Channel ch = client.connect(server.deviceAddress(), server.ifaceAddress(), mine).sync().channel();
        ch.writeAndFlush(Frames.numbered(0)).sync();
        await(() -> accepted.size() == 1, "no lane accepted");
        accepted.get(0).expect(0, 1);
        ShmChannel back = (ShmChannel) accepted.get(0).channel();
        for (int round = 1; round <= 3; round++) {
            await(back.outboundRing()::isConsumerSleeping, "the reader's loop never parked");
            back.writeAndFlush(Frames.numbered(round)).sync();
            mine.expect(round, 1);
        }
        ch.close().sync();
        accepted.get(0).awaitInactive();
    }

    /** Each socket's bytes, as text, into one queue (one instance for every accepted socket). */
    @ChannelHandler.Sharable
    static final class LineCollector extends ChannelInboundHandlerAdapter {
        private final LinkedBlockingQueue<String> lines;

        LineCollector(LinkedBlockingQueue<String> lines) {
            this.lines = lines;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ByteBuf b = (ByteBuf) msg;
            lines.add(b.toString(StandardCharsets.US_ASCII));
            b.release();
        }
    }

    /**
     * A busy-polling loop whose sockets have been quiet a while polls them less often ({@code QUIET_DELEGATE_NANOS})
     * while its rings are busy: a socket of a plain Netty channel on that loop still gets its bytes and its connects
     * through after each quiet spell, with an shm lane streaming the whole time.
     */
    @Test
    void socketsOnABusyRingLoopAreServedAfterQuietSpells() throws Exception {
        AtomicLong frames = new AtomicLong();
        CompletableFuture<Channel> acceptedLane = new CompletableFuture<>();
        Iface server = ifaces.open(() -> new ChannelInboundHandlerAdapter() {
            @Override
            public void channelActive(ChannelHandlerContext ctx) {
                acceptedLane.complete(ctx.channel());
            }

            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                frames.incrementAndGet();
                ((AmFrame) msg).release();
            }
        }, Map.of(), Long.MAX_VALUE);
        Iface client = ifaces.open(this::recorder, Map.of(), Long.MAX_VALUE);
        Channel lane = client.connect(server.deviceAddress(), server.ifaceAddress(), recorder()).sync().channel();
        Channel accepted = acceptedLane.get(Recorder.DEADLINE_SECONDS, TimeUnit.SECONDS);
        EventLoop loop = accepted.eventLoop();
        LinkedBlockingQueue<String> lines = new LinkedBlockingQueue<>();
        Channel listener = new ServerBootstrap().group(loop)
                .channel(NioServerSocketChannel.class)
                .childHandler(new LineCollector(lines)).bind("127.0.0.1", 0).sync().channel();
        EventLoopGroup other = new MultiThreadIoEventLoopGroup(1,
                NioIoHandler.newFactory());
        AtomicBoolean streaming = new AtomicBoolean(true);
        try {
            // The lane streams from the client's loop the whole time, so the server's rings are busy
            Runnable stream = new Runnable() {
                long n;

                @Override
                public void run() {
                    if (!streaming.get() || !lane.isActive()) {
                        return;
                    }
                    for (int i = 0; i < 64 && lane.isWritable(); i++) {
                        lane.write(Frames.numbered(n++));
                    }
                    lane.flush();
                    lane.eventLoop().execute(this);
                }
            };
            lane.eventLoop().execute(stream);
            for (int round = 0; round < 3; round++) {
                Thread.sleep(20); // a quiet spell for the server's sockets: well past QUIET_DELEGATE_PASSES
                Channel socket = new Bootstrap().group(other)
                        .channel(NioSocketChannel.class)
                        .handler(new ChannelInboundHandlerAdapter())
                        .connect(listener.localAddress()).sync().channel();
                Thread.sleep(20);
                socket.writeAndFlush(Unpooled.copiedBuffer("round " + round, StandardCharsets.US_ASCII)).sync();
                assertEquals("round " + round, lines.poll(Recorder.DEADLINE_SECONDS, TimeUnit.SECONDS),
                        "the socket's bytes after a quiet spell");
                socket.close().sync();
            }
            assertTrue(frames.get() > 1000, "the lane streamed " + frames.get() + " frames meanwhile");
        } finally {
            streaming.set(false);
            listener.close().sync();
            other.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
        lane.close().sync();
        assertTrue(accepted.closeFuture().await(Recorder.DEADLINE_SECONDS, TimeUnit.SECONDS));
    }

    /**
     * A busy-polling loop whose rings are idle spins on them without going around the event loop for a while
     * ({@code ShmIoHandler.spinOnRings}); tasks from other threads, timers and socket events must still get through:
     * every task and timer runs, the lane's frames keep flowing, and the loops shut down.
     */
    @Test
    void aBusyPollingLoopWithIdleRingsStillRunsTasksTimersAndFrames() throws Exception {
        List<Recorder> accepted = new CopyOnWriteArrayList<>();
        Iface server = ifaces.open(() -> {
            Recorder r = recorder();
            accepted.add(r);
            return r;
        }, Map.of(), Long.MAX_VALUE);
        Iface client = ifaces.open(this::recorder, Map.of(), Long.MAX_VALUE);
        Recorder mine = recorder();
        Channel ch = client.connect(server.deviceAddress(), server.ifaceAddress(), mine).sync().channel();
        ch.writeAndFlush(Frames.numbered(0)).sync();
        await(() -> accepted.size() == 1, "no lane accepted");
        accepted.get(0).expect(0, 1);
        EventLoop loop = accepted.get(0).channel().eventLoop();
        int tasks = 20_000;
        int timers = 50;
        CountDownLatch ran = new CountDownLatch(tasks + timers);
        for (int i = 0; i < tasks; i++) {
            loop.execute(ran::countDown);
            if (i % 1000 == 0) {
                Thread.sleep(1); // let the loop go idle between bursts, so tasks also arrive while it spins
            }
        }
        for (int i = 0; i < timers; i++) {
            loop.schedule(ran::countDown, 1 + i % 5, TimeUnit.MILLISECONDS);
        }
        assertTrue(ran.await(30, TimeUnit.SECONDS), ran.getCount() + " of " + (tasks + timers)
                + " tasks and timers never ran on the busy-polling loop");
        for (int n = 1; n <= 100; n++) {
            ch.writeAndFlush(Frames.numbered(n));
        }
        accepted.get(0).expect(1, 100);
        ch.close().sync();
        accepted.get(0).awaitInactive();
    }

    /**
     * A record with no flags and an 8-byte header goes to a lane's only handler as its parts when it is a
     * {@link ShortFrameHandler} that takes it (no header buffer, no frame); one it refuses, and every other record,
     * comes up the pipeline as a frame. Order holds across both ways.
     */
    @Test
    void aShortRecordGoesToAShortFrameHandlerAsItsPartsAndEverythingElseAsAFrame() throws Exception {
        LinkedBlockingQueue<String> seen = new LinkedBlockingQueue<>();
        final class Both extends ChannelInboundHandlerAdapter implements ShortFrameHandler {
            @Override
            public boolean shortFrameArrived(int amId, long header, ShortPayload payload) {
                if (header % 2 != 0) {
                    return false; // odd ones come as frames
                }
                ByteBuf copy = payload.copyOut();
                ByteBuf direct = Unpooled.directBuffer(payload.length() + 2).writerIndex(payload.length() + 2);
                payload.copyTo(direct, 2); // the same bytes, copied straight to where a receiver wants them
                seen.add("short " + amId + " " + header + " " + copy.toString(StandardCharsets.ISO_8859_1) + " "
                        + direct.toString(2, payload.length(), StandardCharsets.ISO_8859_1));
                copy.release();
                direct.release();
                return true;
            }

            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                AmFrame f = (AmFrame) msg;
                seen.add("frame " + f.amId() + " flags " + f.flags() + " header " + f.header().readableBytes()
                        + " " + f.payload().toString(StandardCharsets.ISO_8859_1));
                f.release();
            }
        }
        Iface server = iface(Both::new);
        Iface client = iface(this::recorder);
        Channel ch = client.connect(server.deviceAddress(), server.ifaceAddress(), recorder()).sync().channel();
        for (long h = 0; h < 2; h++) {
            ch.write(AmFrame.of(9, 0, Unpooled.buffer(8).writeLongLE(h), Unpooled.copiedBuffer("p" + h,
                    StandardCharsets.ISO_8859_1)));
        }
        ch.write(AmFrame.of(9, 1, Unpooled.buffer(8).writeLongLE(2), Unpooled.copiedBuffer("flagged",
                StandardCharsets.ISO_8859_1)));
        ch.write(AmFrame.of(9, 0, Unpooled.buffer(16).writeLongLE(4).writeLongLE(5), Unpooled.EMPTY_BUFFER));
        ch.writeAndFlush(AmFrame.of(9, 0, Unpooled.buffer(8).writeLongLE(6), Unpooled.EMPTY_BUFFER)).sync();
        List<String> expected = List.of("short 9 0 p0 p0", "frame 9 flags 0 header 8 p1",
                "frame 9 flags 1 header 8 flagged", "frame 9 flags 0 header 16 ", "short 9 6  ");
        for (String e : expected) {
            assertEquals(e, seen.poll(Recorder.DEADLINE_SECONDS, TimeUnit.SECONDS));
        }
        ch.close().sync();
    }

    /**
     * A record's payload of {@link ShmChannel#PLACE_FROM} bytes or more is offered to the lane's {@link
     * PayloadPlacement} and copied from the ring straight into the buffer it gives, which comes up as the frame's
     * payload (no buffer of the lane's in between); a payload it has no place for comes as before, a smaller one is
     * not offered, and a placement that throws is reported as a throw from {@code channelRead}: that frame is gone,
     * the lane and the frames after it are not.
     */
    @Test
    void aLargePayloadIsCopiedFromTheRingStraightToWhereThePlacementSays() throws Exception {
        int large = ShmChannel.PLACE_FROM * 4;
        ByteBuf receive = Unpooled.directBuffer(large, large);
        LinkedBlockingQueue<String> seen = new LinkedBlockingQueue<>();
        List<Integer> offered = new CopyOnWriteArrayList<>();
        final class Placing extends ChannelInboundHandlerAdapter implements PayloadPlacement {
            @Override
            public ByteBuf placePayload(int amId, ByteBuf header, int length) {
                long h = header.getLongLE(header.readerIndex());
                offered.add((int) h);
                if (h == 3) {
                    throw new IllegalStateException("no place for frame 3");
                }
                return h % 2 == 0 ? receive.retainedSlice(0, length).clear() : null;
            }

            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                AmFrame f = (AmFrame) msg;
                ByteBuf p = f.payload();
                boolean inPlace = p.hasMemoryAddress() && p.memoryAddress() + p.readerIndex() == receive.memoryAddress();
                seen.add("frame " + f.header().getLongLE(0) + " " + p.readableBytes() + (inPlace ? " in place" : "")
                        + " " + p.getByte(p.readerIndex() + p.readableBytes() - 1));
                f.release();
            }

            @Override
            public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
                seen.add("caught " + cause.getMessage());
            }
        }
        Iface server = iface(Placing::new);
        Iface client = iface(this::recorder);
        Channel ch = client.connect(server.deviceAddress(), server.ifaceAddress(), recorder()).sync().channel();
        for (long h = 0; h < 4; h++) {
            byte[] bytes = new byte[large - (int) h];
            bytes[bytes.length - 1] = (byte) (10 + h);
            ch.write(AmFrame.of(9, 1, Unpooled.buffer(8).writeLongLE(h), Unpooled.wrappedBuffer(bytes)));
        }
        ch.writeAndFlush(AmFrame.of(9, 1, Unpooled.buffer(8).writeLongLE(4), Unpooled.wrappedBuffer(
                new byte[ShmChannel.PLACE_FROM - 1]))).sync();
        List<String> expected = List.of("frame 0 " + large + " in place 10", "frame 1 " + (large - 1) + " 11",
                "frame 2 " + (large - 2) + " in place 12", "caught no place for frame 3",
                "frame 4 " + (ShmChannel.PLACE_FROM - 1) + " 0");
        for (String e : expected) {
            assertEquals(e, seen.poll(Recorder.DEADLINE_SECONDS, TimeUnit.SECONDS));
        }
        assertEquals(List.of(0, 1, 2, 3), offered, "payloads below PLACE_FROM are not offered");
        assertEquals(12, receive.getByte(large - 3), "frame 2's bytes are in the receive buffer");
        assertTrue(ch.isActive(), "a placement that threw closes nothing");
        assertEquals(1, receive.refCnt(), "every placed slice was released with its frame or by the lane");
        receive.release();
        ch.close().sync();
    }

    /**
     * A large record goes to the reader as soon as it is in the ring, without waiting for the flush, so the reader
     * copies one fragment out while the writer copies the next in; small ones still wait for the flush, one
     * publication per batch.
     */
    @Test
    void aLargeRecordIsPublishedWithoutWaitingForTheFlushAndASmallOneWaitsForIt() throws Exception {
        List<Recorder> accepted = new CopyOnWriteArrayList<>();
        Iface server = recordingIface(accepted);
        Iface client = iface(this::recorder);
        Channel ch = client.connect(server.deviceAddress(), server.ifaceAddress(), recorder()).sync().channel();
        AbstractLaneChannel lane = (AbstractLaneChannel) ch;
        await(() -> accepted.size() == 1, "the server's lane");
        Recorder reader = accepted.get(0);
        int large = ShmChannel.PUBLISH_EARLY_BYTES;
        assertTrue(ch.eventLoop().submit(() -> lane.writeNow(Frames.sized(1, 8, 8, false))).get());
        assertNull(reader.poll(200, TimeUnit.MILLISECONDS), "a small record waits for the flush");
        assertTrue(ch.eventLoop().submit(() -> lane.writeNow(Frames.sized(2, 8, large, true))).get());
        AmFrame first = reader.poll();
        AmFrame second = reader.poll();
        try {
            assertNull(Frames.checkSized(first, 1, 8, 8), "the small record goes with the large one, in order");
            assertNull(Frames.checkSized(second, 2, 8, large));
        } finally {
            first.release();
            second.release();
        }
        ch.close().sync();
    }

    /**
     * The reader drains as fast as the writer fills, so the ring never fills, and each completed write writes the
     * next. Writes must still go in bounded batches, or the writer's loop would not poll its rings again until the
     * flood ends: what the peer sends meanwhile (a keepalive probe, say) would wait.
     */
    @Test
    void aWriterWhoseCompletionsWriteAgainStillReadsWhatItsPeerSends() throws Exception {
        CompletableFuture<Channel> acceptedSide = new CompletableFuture<>();
        Iface server = iface(() -> new ChannelInboundHandlerAdapter() {
            @Override
            public void channelActive(ChannelHandlerContext ctx) {
                acceptedSide.complete(ctx.channel());
            }

            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                ((AmFrame) msg).release();
            }
        });
        Iface client = iface(this::recorder);
        Recorder mine = recorder();
        Channel ch = client.connect(server.deviceAddress(), server.ifaceAddress(), mine).sync().channel();
        long limit = 100_000_000;
        AtomicLong written = new AtomicLong();
        AtomicBoolean stop = new AtomicBoolean();
        ChannelFutureListener[] next = new ChannelFutureListener[1];
        next[0] = f -> {
            if (f.isSuccess() && !stop.get() && written.incrementAndGet() < limit) {
                ch.writeAndFlush(AmFrame.of(5, 0, Unpooled.buffer(8).writeLongLE(0), Unpooled.EMPTY_BUFFER))
                        .addListener(next[0]);
            }
        };
        try {
            ch.eventLoop().execute(() -> ch.writeAndFlush(AmFrame.of(5, 0, Unpooled.buffer(8).writeLongLE(0),
                    Unpooled.EMPTY_BUFFER)).addListener(next[0]));
            await(() -> written.get() > 10_000, "the flood did not start");
            acceptedSide.get(Recorder.DEADLINE_SECONDS, TimeUnit.SECONDS).writeAndFlush(Frames.numbered(42)).sync();
            mine.expect(42, 1);
            long during = written.get();
            assertTrue(during < limit, "read during the flood, not after it");
        } finally {
            stop.set(true);
        }
    }

    /**
     * One flush moves every write it was given before its loop turns, only the writes its completions bring waiting for
     * the next pass: a sender whose window queued while the ring was full then finds nothing queued at its next send,
     * which goes straight into the ring again (a batch at a time behind its refills, every send took the ordinary path).
     */
    @Test
    void aFlushMovesEverythingItWasGivenBeforeItsLoopTurns() throws Exception {
        Iface server = iface(() -> new ChannelInboundHandlerAdapter() {
            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                ((AmFrame) msg).release();
            }
        });
        Iface client = iface(this::recorder);
        Channel ch = client.connect(server.deviceAddress(), server.ifaceAddress(), recorder()).sync().channel();
        int frames = 2_000; // 31 KiB of records: the ring has room for all of them
        CompletableFuture<Long> doneWhenTimerRan = new CompletableFuture<>();
        List<ChannelFuture> writes = ch.eventLoop().submit(() -> {
            List<ChannelFuture> ws = new ArrayList<>(frames);
            for (int i = 0; i < frames; i++) {
                ws.add(ch.write(AmFrame.of(5, 0, Unpooled.buffer(8).writeLongLE(i), Unpooled.EMPTY_BUFFER)));
            }
            ch.flush();
            ch.eventLoop().schedule(() -> doneWhenTimerRan.complete(ws.stream().filter(ChannelFuture::isDone)
                    .count()), 0, TimeUnit.NANOSECONDS);
            return ws;
        }).get(Recorder.DEADLINE_SECONDS, TimeUnit.SECONDS);
        assertEquals(frames, doneWhenTimerRan.get(Recorder.DEADLINE_SECONDS, TimeUnit.SECONDS),
                "writes of one flush left to a later turn of the loop");
        for (ChannelFuture w : writes) {
            assertTrue(w.isSuccess(), () -> "write failed: " + w.cause());
        }
        ch.close().sync();
    }

    /**
     * The doorbell closes while the lane is inside a ring read, as when a handler's reply rings the doorbell of a
     * killed peer and the write fails: the lane delivers each record once and then closes, and the loop lives on.
     * Found by the soak: the doorbell's close ran the lane's peer-gone drain inside the read, which read the batch
     * again from its start and unmapped the ring under the outer read, whose exception ended the loop.
     */
    @Test
    void aDoorbellClosedDuringARingReadDeliversEachRecordOnceAndTheLoopLivesOn() throws Exception {
        int records = 8;
        List<Long> seen = new CopyOnWriteArrayList<>();
        CompletableFuture<Void> inactive = new CompletableFuture<>();
        List<Recorder> later = new CopyOnWriteArrayList<>();
        AtomicBoolean first = new AtomicBoolean(true);
        Iface server = iface(() -> first.getAndSet(false) ? new ChannelInboundHandlerAdapter() {
            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                AmFrame f = (AmFrame) msg;
                try {
                    seen.add(f.header().getLongLE(f.header().readerIndex()));
                } finally {
                    f.release();
                }
                ((ShmChannel) ctx.channel()).doorbell().close();
            }

            @Override
            public void channelInactive(ChannelHandlerContext ctx) {
                inactive.complete(null);
            }
        } : laterRecorder(later));
        Iface client = iface(this::recorder);
        Channel ch = client.connect(server.deviceAddress(), server.ifaceAddress(), recorder()).sync().channel();
        ch.eventLoop().submit(() -> { // one flush: the reader finds all of them in one batch
            for (int i = 0; i < records; i++) {
                ch.write(Frames.numbered(i));
            }
            ch.flush();
        }).sync();
        inactive.get(Recorder.DEADLINE_SECONDS, TimeUnit.SECONDS);
        assertEquals(LongStream.range(0, records).boxed().toList(), seen);
        Channel again = client.connect(server.deviceAddress(), server.ifaceAddress(), recorder()).sync().channel();
        again.writeAndFlush(Frames.numbered(9)).sync();
        await(() -> later.size() == 1, "the server's loop accepts no more lanes");
        later.get(0).expect(9, 1);
    }

    private Recorder laterRecorder(List<Recorder> later) {
        Recorder r = recorder();
        later.add(r);
        return r;
    }

    @Test
    void aCorruptRecordClosesOnlyThatConnection() throws Exception {
        List<Recorder> accepted = new CopyOnWriteArrayList<>();
        Iface server = recordingIface(accepted);
        Iface client = iface(this::recorder);
        ShmChannel bad = (ShmChannel) client.connect(server.deviceAddress(), server.ifaceAddress(), recorder())
                .sync().channel();
        Channel good = client.connect(server.deviceAddress(), server.ifaceAddress(), recorder()).sync()
                .channel();
        await(() -> accepted.size() == 2, "both lanes accepted");
        // Write a record with am id 0 straight into the shared ring, as a broken or hostile peer would.
        bad.eventLoop().submit(() -> {
            try (Arena a = Arena.ofConfined()) {
                assertTrue(bad.outboundRing().write(0 | 8 << 16, a.allocate(16)));
            }
            bad.outboundRing().takeConsumerSleeping();
            return null;
        }).sync();
        bad.writeAndFlush(Frames.numbered(1)); // rings the doorbell if the reader sleeps
        Recorder victim = accepted.get(0);
        victim.awaitInactive();
        assertTrue(victim.errors().stream().anyMatch(e -> e instanceof CorruptedFrameException
                && e.getMessage().contains("am id 0")), () -> "errors: " + victim.errors());
        assertTrue(bad.closeFuture().await(Recorder.DEADLINE_SECONDS, TimeUnit.SECONDS),
                "the peer's close reaches the writer of the corrupt record");
        good.writeAndFlush(Frames.numbered(7)).sync();
        accepted.get(1).expect(7, 1);
    }

    @Test
    void handshakeGarbageClosesOnlyThatSocket() throws Exception {
        Recorder accepted = recorder();
        Iface server = iface(() -> accepted);
        ByteBuffer b = ByteBuffer.wrap(server.ifaceAddress()).order(ByteOrder.LITTLE_ENDIAN);
        Path socket = ShmFiles.socket(ShmFiles.DIR, b.getInt(), b.getInt());
        try (SocketChannel raw = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            raw.connect(UnixDomainSocketAddress.of(socket));
            raw.write(ByteBuffer.wrap("GET / HTTP/1.1\r\n\r\n".getBytes(StandardCharsets.US_ASCII)));
            ByteBuffer sink = ByteBuffer.allocate(256);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            int n = 0;
            while (n >= 0 && System.nanoTime() < deadline) {
                sink.clear();
                n = raw.read(sink);
            }
            assertEquals(-1, n, "the iface closes a socket that speaks nonsense");
        }
        Iface client = iface(this::recorder);
        Channel ch = client.connect(server.deviceAddress(), server.ifaceAddress(), recorder()).sync().channel();
        ch.writeAndFlush(Frames.numbered(3)).sync();
        accepted.expect(3, 1);
    }

    @Test
    void staleFilesOfDeadProcessesAreReapedAtStartAndLiveOnesKept() throws Exception {
        Process gone = new ProcessBuilder("true").start();
        assertTrue(gone.waitFor(10, TimeUnit.SECONDS));
        long dead = gone.pid();
        Path ring = ShmFiles.DIR.resolve("nucx-" + dead + "-9-1.ring");
        Path sock = ShmFiles.DIR.resolve("nucx-" + dead + "-9.sock");
        Path live = ShmFiles.DIR.resolve("nucx-" + ShmFiles.pid() + "-999999-1.ring");
        Files.write(ring, new byte[64]);
        Files.write(sock, new byte[0]);
        Files.write(live, new byte[64]);
        try {
            iface(this::recorder);
            assertFalse(Files.exists(ring), "a dead process's ring is reaped");
            assertFalse(Files.exists(sock), "a dead process's socket is reaped");
            assertTrue(Files.exists(live), "a live process's file is kept");
        } finally {
            Files.deleteIfExists(ring);
            Files.deleteIfExists(sock);
            Files.deleteIfExists(live);
        }
    }
}
