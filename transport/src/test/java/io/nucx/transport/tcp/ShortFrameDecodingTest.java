package io.nucx.transport.tcp;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SslProvider;
import io.nucx.transport.AmFrame;
import io.nucx.transport.Device;
import io.nucx.transport.ShortFrameHandler;
import io.nucx.transport.ShortPayload;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.function.IntPredicate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link AmFrameDecoder}'s short frames in place: a whole frame with no flags, an 8-byte header and a payload of at most
 * {@link AmFrameDecoder#SHORT_PAYLOAD} bytes goes to the lane's last handler as its parts when it takes them, in the
 * order of the frames around it, and as a frame otherwise.
 */
class ShortFrameDecodingTest {

    /** The lane's last handler: takes the short frames of the ids {@code takes} accepts, records every arrival. */
    private static final class Recorder extends ChannelInboundHandlerAdapter implements ShortFrameHandler {
        final List<String> arrivals = new ArrayList<>();
        final List<Throwable> errors = new ArrayList<>();
        final IntPredicate takes;
        ShortPayload kept;
        /** Frames taken per loop turn (a lane's share); frames taken this turn; each ended turn's count. */
        int sharePerTurn = Integer.MAX_VALUE;
        int thisTurn;
        final List<Integer> perTurn = new ArrayList<>();

        Recorder(IntPredicate takes) {
            this.takes = takes;
        }

        @Override
        public boolean shortFrameArrived(int amId, long header, ShortPayload payload) {
            if (!takes.test(amId)) {
                return false;
            }
            if (amId == THROWS) {
                throw new IllegalStateException("handler failed on frame " + header);
            }
            ByteBuf into = Unpooled.buffer(payload.length());
            ByteBuf part = payload.length() > 2 ? payload.copyOut(1, 2) : Unpooled.EMPTY_BUFFER;
            try {
                payload.copyTo(into, 0);
                into.writerIndex(payload.length());
                arrivals.add("short " + amId + " " + header + " " + text(into) + " part " + text(part));
            } finally {
                into.release();
                part.release();
            }
            kept = payload;
            thisTurn++;
            return true;
        }

        @Override
        public int turnShareLeft() {
            return sharePerTurn - thisTurn;
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            perTurn.add(thisTurn);
            thisTurn = 0;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            AmFrame f = (AmFrame) msg;
            thisTurn++;
            try {
                arrivals.add("frame " + f.amId() + " " + (f.header().readableBytes() == 8
                        ? f.header().getLongLE(f.header().readerIndex()) : -1) + " " + text(f.payload()));
            } finally {
                f.release();
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            errors.add(cause);
        }
    }

    private static final int THROWS = 99;

    private static String text(ByteBuf b) {
        return b.toString(b.readerIndex(), b.readableBytes(), StandardCharsets.US_ASCII);
    }

    private static AmFrame frame(int amId, int flags, long header, String payload) {
        return AmFrame.of(amId, flags, Unpooled.buffer(8).writeLongLE(header),
                Unpooled.copiedBuffer(payload, StandardCharsets.US_ASCII));
    }

    /** The wire bytes of {@code frames}, as one buffer (one read). */
    private static ByteBuf wire(AmFrame... frames) {
        EmbeddedChannel enc = new EmbeddedChannel(new AmFrameEncoder(TcpIface.attributes(new Device("lo", "network"),
                256 * 1024, false, false)));
        for (AmFrame f : frames) {
            assertTrue(enc.writeOutbound(f));
        }
        ByteBuf wire = Unpooled.directBuffer();
        for (ByteBuf b; (b = enc.readOutbound()) != null; ) {
            wire.writeBytes(b);
            b.release();
        }
        assertFalse(enc.finish());
        return wire;
    }

    /** A mix: short frames, one with flags, one with a 16-byte header, one with a payload over the bound. */
    private static ByteBuf mixedWire() {
        String big = "x".repeat(AmFrameDecoder.SHORT_PAYLOAD + 1);
        return wire(frame(7, 0, 1, "abcd"), frame(7, 0, 2, ""), frame(8, 1, 3, "flag"),
                AmFrame.of(7, 0, Unpooled.buffer(16).writeLongLE(4).writeLongLE(5), Unpooled.EMPTY_BUFFER),
                frame(7, 0, 6, "efgh"), frame(7, 0, 7, big), frame(9, 0, 8, "ijkl"), frame(7, 0, 9, "mnop"));
    }

    private static AmFrameDecoder decoderOf(EmbeddedChannel ch) {
        return ch.pipeline().get(AmFrameDecoder.class);
    }

    @Test
    void shortFramesGoToTheLastHandlerAsTheirPartsInTheOrderOfTheFramesAroundThem() {
        Recorder last = new Recorder(id -> id == 7);
        EmbeddedChannel ch = new EmbeddedChannel(new AmFrameDecoder(64, 256 * 1024), last);
        ch.writeInbound(mixedWire());
        String big = "x".repeat(AmFrameDecoder.SHORT_PAYLOAD + 1);
        assertEquals(List.of("short 7 1 abcd part bc", "short 7 2  part ", "frame 8 3 flag", "frame 7 -1 ",
                "short 7 6 efgh part fg", "frame 7 7 " + big, "frame 9 8 ijkl", "short 7 9 mnop part no"),
                last.arrivals);
        assertEquals(4, decoderOf(ch).shortFrames());
        ByteBuf late = Unpooled.buffer(4);
        try {
            assertThrows(IllegalStateException.class, () -> last.kept.copyTo(late, 0),
                    "a payload used after its handler returned");
        } finally {
            late.release();
        }
        assertTrue(last.errors.isEmpty(), () -> last.errors.toString());
        assertFalse(ch.finish());
    }

    @Test
    void aFrameOfTcpsLargestShortPayloadGoesInPlaceAndOneByteMoreAsAFrame() {
        Recorder last = new Recorder(id -> id == 7);
        EmbeddedChannel ch = new EmbeddedChannel(new AmFrameDecoder(64, 256 * 1024), last);
        String most = "y".repeat(AmFrameDecoder.SHORT_PAYLOAD);
        ch.writeInbound(wire(frame(7, 0, 1, most), frame(7, 0, 2, most + "z")));
        assertEquals(List.of("short 7 1 " + most + " part yy", "frame 7 2 " + most + "z"), last.arrivals);
        assertEquals(1, decoderOf(ch).shortFrames());
        assertFalse(ch.finish());
    }

    @Test
    void aShortFrameSplitOverReadsGoesInPlaceOnceWhole() {
        Recorder last = new Recorder(id -> id == 7);
        EmbeddedChannel ch = new EmbeddedChannel(new AmFrameDecoder(64, 256 * 1024), last);
        ByteBuf wire = wire(frame(7, 0, 1, "abcd"), frame(7, 0, 2, "efgh"));
        for (int i = 0; i < wire.readableBytes(); i++) {
            ch.writeInbound(wire.retainedSlice(i, 1));
        }
        wire.release();
        assertEquals(List.of("short 7 1 abcd part bc", "short 7 2 efgh part fg"), last.arrivals);
        assertFalse(ch.finish());
    }

    @Test
    void anInboundHandlerBetweenTheDecoderAndTheLastSeesEveryFrame() {
        Recorder last = new Recorder(id -> true);
        List<Integer> seen = new ArrayList<>();
        EmbeddedChannel ch = new EmbeddedChannel(new AmFrameDecoder(64, 256 * 1024), last);
        ch.pipeline().addBefore(ch.pipeline().context(last).name(), "probe", new ChannelInboundHandlerAdapter() {
            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                seen.add(((AmFrame) msg).amId());
                ctx.fireChannelRead(msg);
            }
        });
        ch.writeInbound(wire(frame(7, 0, 1, "abcd"), frame(9, 0, 2, "efgh")));
        assertEquals(List.of(7, 9), seen);
        assertEquals(List.of("frame 7 1 abcd", "frame 9 2 efgh"), last.arrivals);
        assertEquals(0, decoderOf(ch).shortFrames());
        ch.pipeline().remove("probe"); // gone again: the next short frames go in place
        ch.writeInbound(wire(frame(7, 0, 3, "ijkl")));
        assertEquals("short 7 3 ijkl part jk", last.arrivals.get(2));
        assertEquals(1, decoderOf(ch).shortFrames());
        assertFalse(ch.finish());
    }

    @Test
    void aThrowFromTheHandlerReachesItsExceptionCaughtAndTheNextFramesStillArrive() {
        Recorder last = new Recorder(id -> true);
        EmbeddedChannel ch = new EmbeddedChannel(new AmFrameDecoder(64, 256 * 1024), last);
        ch.writeInbound(wire(frame(7, 0, 1, "abcd"), frame(THROWS, 0, 2, "efgh"), frame(7, 0, 3, "ijkl")));
        assertEquals(List.of("short 7 1 abcd part bc", "short 7 3 ijkl part jk"), last.arrivals);
        assertEquals(1, last.errors.size(), () -> last.errors.toString());
        assertEquals("handler failed on frame 2", last.errors.get(0).getMessage());
        assertFalse(ch.finish());
    }

    /** Ten frames, short ones (id 7) and others (id 9, not taken as parts), the wire of one read. */
    private static ByteBuf tenFrames() {
        List<AmFrame> frames = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            frames.add(frame(i % 4 == 3 ? 9 : 7, 0, i, "p" + i));
        }
        return wire(frames.toArray(new AmFrame[0]));
    }

    private static List<String> tenArrivals() {
        List<String> expected = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            expected.add(i % 4 == 3 ? "frame 9 " + i + " p" + i : "short 7 " + i + " p" + i + " part ");
        }
        return expected;
    }

    @Test
    void framesBeyondTheTurnsShareWaitInTheCumulationWithReadsPausedAndGoOnTurnByTurnInOrder() {
        Recorder last = new Recorder(id -> id == 7);
        last.sharePerTurn = 3;
        EmbeddedChannel ch = new EmbeddedChannel(new AmFrameDecoder(64, 256 * 1024), last);
        ch.pipeline().fireChannelRead(tenFrames()); // one read, its batch not ended yet
        assertEquals(3, last.arrivals.size(), () -> last.arrivals.toString());
        assertFalse(ch.config().isAutoRead(), "reads pause while frames wait");
        ch.pipeline().fireChannelReadComplete();
        for (int turn = 0; turn < 10 && last.arrivals.size() < 10; turn++) {
            assertFalse(ch.config().isAutoRead(), "reads paused until nothing waits");
            ch.runPendingTasks();
        }
        assertEquals(tenArrivals(), last.arrivals);
        assertEquals(List.of(3, 3, 3, 1), last.perTurn, "frames per turn");
        assertEquals(3, decoderOf(ch).turnsDeferred());
        assertEquals(8, decoderOf(ch).shortFrames(), "every short frame taken as its parts, none made an object");
        assertTrue(ch.config().isAutoRead(), "reads resume once nothing waits");
        assertTrue(last.errors.isEmpty(), () -> last.errors.toString());
        assertFalse(ch.finish());
    }

    /**
     * Right behind TLS's record layer the share holds as where the decoder reads the socket itself (what the layer
     * unwrapped is fired from its context here, as it fires it); behind any other handler, which might hold bytes of
     * its own until a read the pause would not let come, the decoder takes no share.
     */
    @Test
    void theShareHoldsRightBehindTlsAndNotBehindAnyOtherHandler() throws Exception {
        Recorder last = new Recorder(id -> id == 7);
        last.sharePerTurn = 3;
        SslHandler tls = SslContextBuilder.forClient().sslProvider(SslProvider.JDK).build()
                .newHandler(ByteBufAllocator.DEFAULT);
        EmbeddedChannel ch = new EmbeddedChannel(tls, new AmFrameDecoder(64, 256 * 1024), last);
        ChannelHandlerContext unwrapped = ch.pipeline().context(tls);
        unwrapped.fireChannelRead(tenFrames());
        assertEquals(3, last.arrivals.size(), () -> last.arrivals.toString());
        assertFalse(ch.config().isAutoRead(), "reads pause while frames wait");
        assertTrue(decoderOf(ch).holdsPeerFrames(), "keepalive counts what waits for the next turn");
        unwrapped.fireChannelReadComplete();
        for (int turn = 0; turn < 10 && last.arrivals.size() < 10; turn++) {
            ch.runPendingTasks();
        }
        assertEquals(tenArrivals(), last.arrivals);
        assertEquals(List.of(3, 3, 3, 1), last.perTurn, "frames per turn");
        assertTrue(ch.config().isAutoRead(), "reads resume once nothing waits");
        assertFalse(decoderOf(ch).holdsPeerFrames());
        assertTrue(last.errors.isEmpty(), () -> last.errors.toString());
        ch.finishAndReleaseAll(); // the record layer's hello, never answered

        Recorder behindOther = new Recorder(id -> id == 7);
        behindOther.sharePerTurn = 3;
        EmbeddedChannel other = new EmbeddedChannel(new ChannelInboundHandlerAdapter(),
                new AmFrameDecoder(64, 256 * 1024), behindOther);
        other.pipeline().fireChannelRead(tenFrames());
        other.pipeline().fireChannelReadComplete();
        assertEquals(tenArrivals(), behindOther.arrivals, "all in the read's own turn");
        assertEquals(0, decoderOf(other).turnsDeferred());
        assertTrue(other.config().isAutoRead());
        assertFalse(other.finish());
    }

    @Test
    void framesWaitingForTheNextTurnWhenTheConnectionClosesAreDecodedThen() {
        Recorder last = new Recorder(id -> id == 7);
        last.sharePerTurn = 2;
        EmbeddedChannel ch = new EmbeddedChannel(new AmFrameDecoder(64, 256 * 1024), last);
        ch.pipeline().fireChannelRead(tenFrames());
        assertEquals(2, last.arrivals.size(), () -> last.arrivals.toString());
        ch.close(); // the lane's handler decides what it keeps; the decoder hands up the whole stream
        List<String> expected = new ArrayList<>(tenArrivals());
        // Netty's last decode is one call: what follows a frame in it goes up as frames too, in order.
        expected.set(8, "frame 7 8 p8");
        expected.set(9, "frame 7 9 p9");
        assertEquals(expected, last.arrivals);
        assertTrue(last.errors.isEmpty(), () -> last.errors.toString());
        assertFalse(ch.finish());
    }

    private static AmFrameEncoder encoder() {
        return new AmFrameEncoder(TcpIface.attributes(new Device("lo", "network"), 256 * 1024, false, false));
    }

    @Test
    void shortFramesWrittenBetweenFlushesShareOneBufferAndKeepTheirPlaceAmongTheLanesOtherFrames() {
        EmbeddedChannel enc = new EmbeddedChannel(encoder());
        ChannelHandlerContext writer = enc.pipeline().context(AmFrameEncoder.class);
        AmFrameEncoder encoder = (AmFrameEncoder) writer.handler();
        ByteBuf payload = Unpooled.copiedBuffer("abcd", StandardCharsets.US_ASCII);
        List<ByteBuf> written = new ArrayList<>();
        try {
            assertTrue(encoder.writeShort(writer, 7, 1, payload));
            assertTrue(encoder.writeShort(writer, 7, 2, payload));
            assertEquals(4, payload.readableBytes(), "the payload stays the caller's, untouched");
            enc.write(frame(9, 0, 3, "frame")); // the ordinary way: behind the two
            assertTrue(encoder.writeShort(writer, 7, 4, payload));
            enc.flush();
            for (ByteBuf b; (b = enc.readOutbound()) != null; ) {
                written.add(b);
            }
            assertEquals(3, written.size(), "the two short frames in one buffer, the frame, the third short frame");
            assertEquals(2 * 20, written.get(0).readableBytes());
            ByteBuf all = Unpooled.directBuffer();
            written.forEach(b -> all.writeBytes(b));
            Recorder last = new Recorder(id -> id == 7);
            EmbeddedChannel dec = new EmbeddedChannel(new AmFrameDecoder(64, 256 * 1024), last);
            dec.writeInbound(all);
            assertEquals(List.of("short 7 1 abcd part bc", "short 7 2 abcd part bc", "frame 9 3 frame",
                    "short 7 4 abcd part bc"), last.arrivals);
            assertFalse(dec.finish());
        } finally {
            written.forEach(ByteBuf::release);
            payload.release();
        }
        assertFalse(enc.finish());
    }

    @Test
    void aBatchGoesOutWhenFullAndAnUnflushedOneIsReleasedWithTheChannel() {
        EmbeddedChannel enc = new EmbeddedChannel(encoder());
        ChannelHandlerContext writer = enc.pipeline().context(AmFrameEncoder.class);
        AmFrameEncoder encoder = (AmFrameEncoder) writer.handler();
        ByteBuf payload = Unpooled.wrappedBuffer(new byte[AmFrameDecoder.COPY_PAYLOAD]);
        int frameLength = 16 + payload.readableBytes();
        int perBatch = AmFrameEncoder.BATCH_CAPACITY / frameLength;
        for (int i = 0; i < perBatch + 1; i++) {
            assertTrue(encoder.writeShort(writer, 7, i, payload));
        }
        enc.flush();
        ByteBuf first = enc.readOutbound();
        ByteBuf second = enc.readOutbound();
        try {
            assertEquals(perBatch * frameLength, first.readableBytes(), "a batch holds what fits its capacity");
            assertEquals(frameLength, second.readableBytes(), "the frame that did not fit begins the next");
            assertEquals(null, (Object) enc.readOutbound());
        } finally {
            first.release();
            second.release();
        }
        assertTrue(encoder.writeShort(writer, 7, 0, payload)); // never flushed: released when the channel goes
        assertFalse(enc.finishAndReleaseAll());
        payload.release();
    }
}
