package io.nucx.transport.self;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.nucx.transport.AbstractLaneChannel;
import io.nucx.transport.AmFrame;
import io.nucx.transport.Iface;
import io.nucx.transport.ShortFrameHandler;
import io.nucx.transport.ShortPayload;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Self's {@code am_short} ({@link AbstractLaneChannel#writeShortNow}): the record is copied into the reader's
 * {@link RecordRing}, which holds a record for each ordinary frame too, so short frames keep the lane's order; the
 * reader hands it to a lane's only handler that is a {@link ShortFrameHandler} as its parts, and as a frame with the
 * same bytes to any other (or when that handler refuses it). Two real loops, the ring wrapping many times over.
 */
@Timeout(60)
class SelfShortFrameTest {

    private static final int AM_ID = 5;
    /** Sizes every 8-byte alignment case and self's largest short payload (maxShort 8192) run through. */
    private static final int[] SIZES = {0, 1, 7, 8, 9, 100, 1000, 8192 - Long.BYTES, 3};

    @RegisterExtension
    final SelfLoops loops = new SelfLoops();

    /** What the reader saw: each message as "short|frame header length+checksum", in order. */
    private static final class Reader extends ChannelInboundHandlerAdapter implements ShortFrameHandler {
        final List<String> seen = new ArrayList<>();
        final CompletableFuture<Channel> channel = new CompletableFuture<>();
        volatile CountDownLatch expected = new CountDownLatch(0);
        volatile Throwable failure;
        boolean autoRead = true;
        /** The reader closes its lane from the handler on this message, a short one, before using it (-1: never). */
        int closeAfter = -1;

        @Override
        public void handlerAdded(ChannelHandlerContext ctx) {
            ctx.channel().config().setAutoRead(autoRead);
            channel.complete(ctx.channel());
        }

        @Override
        public boolean shortFrameArrived(int amId, long header, ShortPayload payload) {
            if (header % 3 == 0) {
                return false; // these come up the pipeline as frames
            }
            if (seen.size() + 1 == closeAfter) {
                channel.getNow(null).close(); // the payload stays valid until this call returns
            }
            // Both ways out of the ring: into a buffer at an offset, and copied out
            ByteBuf at = Unpooled.buffer(payload.length() + 3).writerIndex(payload.length() + 3);
            payload.copyTo(at, 3);
            ByteBuf out = payload.copyOut();
            try {
                assertEquals(at.slice(3, payload.length()), out, "copyTo and copyOut give the same bytes");
                record("short", amId, header, out);
            } finally {
                at.release();
                out.release();
            }
            return true;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            AmFrame f = (AmFrame) msg;
            try {
                assertEquals(Long.BYTES, f.header().readableBytes());
                record("frame", f.amId(), f.header().getLongLE(f.header().readerIndex()), f.payload());
            } finally {
                f.release();
            }
        }

        private void record(String how, int amId, long header, ByteBuf payload) {
            seen.add(how + " " + amId + " " + header + " " + describe(payload));
            expected.countDown();
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            failure = cause;
        }
    }

    private static String describe(ByteBuf payload) {
        byte[] b = new byte[payload.readableBytes()];
        payload.getBytes(payload.readerIndex(), b);
        return b.length + ":" + Arrays.hashCode(b);
    }

    private static ByteBuf payload(long seq, int size, boolean direct) {
        ByteBuf b = direct ? Unpooled.directBuffer(size + 2) : Unpooled.buffer(size + 2);
        b.writeShort(0xdead); // a reader index not at 0
        for (int i = 0; i < size; i++) {
            b.writeByte((int) (seq * 31 + i));
        }
        b.readerIndex(2);
        return b;
    }

    private record Pair(AbstractLaneChannel writer, Reader reader, Channel readerChannel) {
    }

    private Pair connect(Reader reader) throws Exception {
        AbstractLaneChannel writer = connectTo(reader);
        return new Pair(writer, reader, reader.channel.get(10, TimeUnit.SECONDS));
    }

    /** A writer on loop A whose peer on loop B gets {@code accepted}. */
    private AbstractLaneChannel connectTo(ChannelHandler accepted) throws Exception {
        Iface a = loops.open(loops.loopA, ChannelInboundHandlerAdapter::new, Map.of());
        Iface b = loops.open(loops.loopB, () -> accepted, Map.of());
        return (AbstractLaneChannel) a.connect(b.deviceAddress(), b.ifaceAddress(), new ChannelInboundHandlerAdapter())
                .sync().channel();
    }

    /**
     * 20,000 messages, every third an ordinary frame and the rest short when the lane takes them, of every size case,
     * from heap and direct buffers: the reader sees each once, in order, with its bytes; those it refuses as frames.
     * Their bytes run through the 64 KiB ring many times over while the reader drains it.
     */
    @Test
    void shortFramesKeepTheLanesOrderWithFramesAndTheirBytesThroughTheWrappingRing() throws Exception {
        Reader reader = new Reader();
        Pair p = connect(reader);
        int n = 20_000;
        reader.expected = new CountDownLatch(n);
        List<String> sent = new ArrayList<>();
        long[] shortBytes = new long[1];
        int taken = p.writer().eventLoop().submit(() -> {
            int shorts = 0;
            for (int i = 0; i < n; i++) {
                int size = SIZES[i % SIZES.length];
                ByteBuf data = payload(i, size, i % 2 == 0);
                boolean asShort = i % 3 != 1
                        && p.writer().writeShortNow(AM_ID, i, data); // copied: the caller keeps its buffer
                sent.add((asShort && i % 3 != 0 ? "short " : "frame ") + AM_ID + " " + i + " " + describe(data));
                if (asShort) {
                    shorts++;
                    shortBytes[0] += size;
                    data.release();
                } else {
                    // flushed at once: a short frame may go only while nothing waits in the outbound buffer
                    p.writer().writeAndFlush(AmFrame.of(AM_ID, 0, Unpooled.buffer(8).writeLongLE(i), data));
                }
                if (i % 16 == 15) {
                    p.writer().flush();
                }
            }
            p.writer().flush();
            return shorts;
        }).get(30, TimeUnit.SECONDS);
        assertTrue(reader.expected.await(30, TimeUnit.SECONDS), "messages missing: " + reader.expected.getCount());
        assertNull(reader.failure);
        List<String> seen = p.readerChannel().eventLoop().submit(() -> List.copyOf(reader.seen)).get();
        assertEquals(sent.size(), seen.size());
        for (int i = 0; i < sent.size(); i++) {
            assertEquals(sent.get(i), seen.get(i), "message " + i);
        }
        assertTrue(taken > n / 3, "the lane took " + taken + " of " + n + " messages as short frames");
        assertTrue(shortBytes[0] > 10 * SelfChannel.SHORT_RING_BYTES, shortBytes[0]
                + " bytes of short payloads: the ring did not wrap many times");
        assertEquals(0, ((SelfChannel) p.readerChannel()).queuedBytes(), "every queued byte accounted for");
    }

    /**
     * A reader that does not read: the writer fills its ring and then writeShortNow says no, leaving the message to
     * the ordinary write (which waits in the queue behind); the queue bound holds for short frames as for frames.
     * Once the reader reads, everything arrives in order, and a writer's close delivers what it wrote first.
     */
    @Test
    void aFullRingRefusesAndTheMessageGoesTheOrdinaryWayInOrder() throws Exception {
        Reader reader = new Reader();
        reader.autoRead = false;
        Pair p = connect(reader);
        List<String> sent = new ArrayList<>();
        int[] refusedAt = {-1};
        p.writer().eventLoop().submit(() -> {
            for (int i = 0; refusedAt[0] < 0 && i < 1000; i++) {
                ByteBuf data = payload(i, 1000, false);
                String d = describe(data);
                if (p.writer().writeShortNow(AM_ID, 3L * i + 1, data)) {
                    sent.add("short " + AM_ID + " " + (3L * i + 1) + " " + d);
                    data.release();
                } else {
                    refusedAt[0] = i;
                    sent.add("frame " + AM_ID + " " + (3L * i + 1) + " " + d);
                    p.writer().write(AmFrame.of(AM_ID, 0, Unpooled.buffer(8).writeLongLE(3L * i + 1), data));
                }
            }
            ByteBuf after = payload(9999, 5, true);
            assertFalse(p.writer().writeShortNow(AM_ID, 9999 * 3 + 1, after), "an ordinary write is queued ahead");
            sent.add("frame " + AM_ID + " " + (9999 * 3 + 1) + " " + describe(after));
            p.writer().write(AmFrame.of(AM_ID, 0, Unpooled.buffer(8).writeLongLE(9999 * 3 + 1), after));
            p.writer().flush();
        }).get(30, TimeUnit.SECONDS);
        int fitted = refusedAt[0];
        assertTrue(fitted > 10 && fitted * RecordRing.recordSize(1000) <= SelfChannel.SHORT_RING_BYTES,
                fitted + " records of 1000 bytes fitted a ring of " + SelfChannel.SHORT_RING_BYTES);
        reader.expected = new CountDownLatch(sent.size());
        ChannelFuture closed = p.writer().close();
        assertTrue(reader.expected.await(30, TimeUnit.SECONDS), "messages missing: " + reader.expected.getCount());
        assertTrue(closed.await(10, TimeUnit.SECONDS));
        assertTrue(p.readerChannel().closeFuture().await(10, TimeUnit.SECONDS), "the writer's close ends the reader");
        assertNull(reader.failure);
        assertEquals(sent, p.readerChannel().eventLoop().submit(() -> List.copyOf(reader.seen)).get());
    }

    /**
     * A handler that closes its lane in the middle of a batch, then reads the short payload it was given: the payload
     * is still there (the drop of the queue waits for the delivery to end), nothing after that message is delivered,
     * and the rest of the queue, short records and frames, is dropped with every frame released.
     */
    @Test
    void aCloseFromAHandlerMidBatchDropsTheRestAndReleasesItsFrames() throws Exception {
        Reader reader = new Reader();
        reader.autoRead = false;
        reader.closeAfter = 5;
        Pair p = connect(reader);
        List<ByteBuf> framePayloads = new ArrayList<>();
        int shorts = p.writer().eventLoop().submit(() -> {
            int n = 0;
            for (int i = 0; i < 40; i++) {
                ByteBuf data = payload(i, 16, i % 4 == 1);
                if (i % 2 == 0 && p.writer().writeShortNow(AM_ID, 3L * i + 1, data)) {
                    data.release();
                    n++;
                } else {
                    framePayloads.add(data.retain()); // ours: the lane must give back the other
                    p.writer().writeAndFlush(AmFrame.of(AM_ID, 0, Unpooled.buffer(8).writeLongLE(3L * i + 1), data));
                }
            }
            p.writer().flush();
            return n;
        }).get(30, TimeUnit.SECONDS);
        assertTrue(shorts == 20 && framePayloads.size() == 20, shorts + " short records, " + framePayloads.size()
                + " frames");
        p.readerChannel().eventLoop().execute(() -> p.readerChannel().config().setAutoRead(true));
        assertTrue(p.readerChannel().closeFuture().await(10, TimeUnit.SECONDS), "the handler's close ends the lane");
        List<String> seen = p.readerChannel().eventLoop().submit(() -> List.copyOf(reader.seen)).get();
        assertEquals(5, seen.size(), "delivered after the close: " + seen);
        assertNull(reader.failure);
        assertEquals(0, ((SelfChannel) p.readerChannel()).queuedBytes(), "every queued frame taken out");
        for (ByteBuf b : framePayloads) {
            assertEquals(1, b.refCnt(), "a frame the closed lane kept");
            b.release();
        }
    }

    /** A lane whose handler is not a ShortFrameHandler gets every short frame as a frame with the same bytes. */
    @Test
    void aPlainHandlerGetsShortFramesAsFrames() throws Exception {
        List<byte[]> payloads = new ArrayList<>();
        List<Long> headers = new ArrayList<>();
        CountDownLatch got = new CountDownLatch(3);
        CompletableFuture<Channel> readerChannel = new CompletableFuture<>();
        ChannelInboundHandlerAdapter plain = new ChannelInboundHandlerAdapter() {
            @Override
            public void handlerAdded(ChannelHandlerContext ctx) {
                readerChannel.complete(ctx.channel());
            }

            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                AmFrame f = (AmFrame) msg;
                headers.add(f.header().getLongLE(f.header().readerIndex()));
                byte[] b = new byte[f.payload().readableBytes()];
                f.payload().getBytes(f.payload().readerIndex(), b);
                payloads.add(b);
                f.release();
                got.countDown();
            }
        };
        AbstractLaneChannel w = connectTo(plain);
        readerChannel.get(10, TimeUnit.SECONDS);
        boolean all = w.eventLoop().submit(() -> {
            boolean ok = true;
            for (int i = 0; i < 3; i++) {
                ByteBuf data = payload(i, i * 5, true);
                ok &= w.writeShortNow(AM_ID, 100 + i, data);
                data.release();
            }
            w.flush();
            return ok;
        }).get(10, TimeUnit.SECONDS);
        assertTrue(all, "the lane took the short frames");
        IllegalArgumentException bad = w.eventLoop().submit(() -> Assertions.assertThrows(
                IllegalArgumentException.class, () -> w.writeShortNow(0, 1, Unpooled.EMPTY_BUFFER))).get();
        assertTrue(bad.getMessage().contains("active message id 0"), bad.getMessage());
        assertTrue(got.await(10, TimeUnit.SECONDS));
        assertEquals(List.of(100L, 101L, 102L), headers);
        for (int i = 0; i < 3; i++) {
            ByteBuf expected = payload(i, i * 5, false);
            byte[] e = new byte[expected.readableBytes()];
            expected.readBytes(e).release();
            assertArrayEquals(e, payloads.get(i));
        }
    }
}
