package io.nucx.transport.tcp;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.CorruptedFrameException;
import io.netty.handler.codec.DecoderException;
import io.netty.handler.codec.TooLongFrameException;
import io.nucx.transport.AmFrame;
import io.nucx.transport.Device;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link AmFrameEncoder} into {@link AmFrameDecoder} on embedded channels, and the decoder's limits. */
class AmFrameDecoderTest {

    private static final int MAX_HEADER = 64;
    private static final long MAX_PAYLOAD = 256 * 1024;

    private static byte[] random(long seed, int length) {
        byte[] b = new byte[length];
        new SplittableRandom(seed).nextBytes(b);
        return b;
    }

    private static ByteBuf bytes(long seed, int length) {
        return Unpooled.wrappedBuffer(random(seed, length));
    }

    /** A frame description kept by the test, so the original frame can be released by the encoder. */
    private record Expected(int amId, int flags, byte[] header, byte[] payload) {
        static Expected of(int amId, int flags, int headerLength, int payloadLength, long seed) {
            return new Expected(amId, flags, random(seed, headerLength), random(seed + 1, payloadLength));
        }

        AmFrame frame() {
            return AmFrame.of(amId, flags, Unpooled.wrappedBuffer(header.clone()), payload.length == 0
                    ? Unpooled.EMPTY_BUFFER : Unpooled.wrappedBuffer(payload.clone()));
        }

        void assertMatches(AmFrame actual) {
            assertEquals(amId, actual.amId(), "am id");
            assertEquals(flags, actual.flags(), "flags");
            assertEquals(header.length, actual.header().readableBytes(), "header length");
            assertEquals(payload.length, actual.payload().readableBytes(), "payload length");
            assertTrue(ByteBufUtil.equals(Unpooled.wrappedBuffer(header), actual.header()), "header bytes");
            assertTrue(ByteBufUtil.equals(Unpooled.wrappedBuffer(payload), actual.payload()), "payload bytes");
        }
    }

    private static List<Expected> sampleFrames() {
        return List.of(
                Expected.of(1, 0, 0, 0, 1),                                        // nothing at all
                Expected.of(2, 0x81, 8, 0, 2),                                     // header only
                Expected.of(3, 7, 24, 100, 3),                                     // small, copied
                Expected.of(4, 0, 16, AmFrameEncoder.COPY_THRESHOLD, 4),           // largest copied payload
                Expected.of(5, 0, 16, AmFrameEncoder.COPY_THRESHOLD + 1, 5),       // smallest gathered payload
                Expected.of(255, 0xff, MAX_HEADER, 200_000, 6));                   // large, every max
    }

    /** Encodes the frames and returns the wire bytes as one buffer. */
    private static ByteBuf encode(List<Expected> frames) {
        EmbeddedChannel enc = new EmbeddedChannel(encoder());
        for (Expected e : frames) {
            assertTrue(enc.writeOutbound(e.frame()));
        }
        ByteBuf wire = Unpooled.buffer();
        for (ByteBuf b; (b = enc.readOutbound()) != null; ) {
            wire.writeBytes(b);
            b.release();
        }
        assertFalse(enc.finish());
        return wire;
    }

    /** An encoder with a tcp iface's limits for {@link #MAX_PAYLOAD}-byte segments. */
    private static AmFrameEncoder encoder() {
        return new AmFrameEncoder(TcpIface.attributes(new Device("lo", "network"), (int) MAX_PAYLOAD, false, false));
    }

    @Test
    void theEncoderRefusesAFrameOverTheIfaceLimitsAndWritesNothingOfIt() {
        // The pipeline hears of each refusal too (a lane's handler closes the lane); here it is only the write's.
        EmbeddedChannel enc = new EmbeddedChannel(encoder(), new ChannelInboundHandlerAdapter() {
            @Override
            public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            }
        });
        ByteBuf payload = bytes(4, (int) MAX_PAYLOAD - 7);
        var f = enc.writeOneOutbound(AmFrame.of(9, 0, Unpooled.buffer(8).writeLongLE(1), payload));
        TooLongFrameException e = assertInstanceOf(TooLongFrameException.class, f.cause());
        assertTrue(e.getMessage().contains("frame of " + (MAX_PAYLOAD + 1) + " bytes (header 8, am id 9)")
                && e.getMessage().contains("header + payload <= " + MAX_PAYLOAD), e.getMessage());
        assertEquals(0, payload.refCnt(), "released with its frame");
        var h = enc.writeOneOutbound(AmFrame.of(9, 0, Unpooled.wrappedBuffer(new byte[MAX_HEADER + 1]),
                Unpooled.EMPTY_BUFFER));
        assertTrue(h.cause().getMessage().contains("header <= " + MAX_HEADER), h.cause().getMessage());
        enc.flush();
        assertNull(enc.readOutbound(), "nothing of either frame was written");
        assertFalse(enc.finish());
    }

    private static EmbeddedChannel decoder() {
        return new EmbeddedChannel(new AmFrameDecoder(MAX_HEADER, MAX_PAYLOAD));
    }

    private static void readAndCheck(EmbeddedChannel dec, List<Expected> frames) {
        for (Expected e : frames) {
            AmFrame f = dec.readInbound();
            assertTrue(f != null, "missing frame " + e.amId());
            try {
                e.assertMatches(f);
            } finally {
                f.release();
            }
        }
        assertNull(dec.readInbound(), "no extra frames");
    }

    @Test
    void framesOfEverySizeSurviveEncoderThenDecoder() {
        List<Expected> frames = sampleFrames();
        ByteBuf wire = encode(frames);
        EmbeddedChannel dec = decoder();
        assertTrue(dec.writeInbound(wire));
        readAndCheck(dec, frames);
        assertFalse(dec.finish());
    }

    @Test
    void encoderCopiesPayloadUpToThresholdAndGathersLargerOnesWithoutCopy() {
        EmbeddedChannel enc = new EmbeddedChannel(encoder());
        ByteBuf small = bytes(1, AmFrameEncoder.COPY_THRESHOLD);
        enc.writeOutbound(AmFrame.of(9, 0, Unpooled.wrappedBuffer(new byte[] {1, 2, 3}), small));
        assertEquals(0, small.refCnt(), "copied payload released with its frame");
        ByteBuf one = enc.readOutbound();
        assertEquals(AmFrameLayout.PREFIX_LENGTH + 3 + AmFrameEncoder.COPY_THRESHOLD, one.readableBytes());
        assertNull(enc.readOutbound(), "a copied frame is one buffer");
        one.release();

        ByteBuf large = bytes(2, AmFrameEncoder.COPY_THRESHOLD + 1);
        enc.writeOutbound(AmFrame.of(9, 0, Unpooled.wrappedBuffer(new byte[] {1, 2, 3}), large));
        ByteBuf prefix = enc.readOutbound();
        ByteBuf payload = enc.readOutbound();
        assertEquals(AmFrameLayout.PREFIX_LENGTH + 3, prefix.readableBytes());
        assertEquals(9, prefix.getUnsignedByte(AmFrameLayout.AM_ID_OFFSET));
        assertEquals(3, prefix.getUnsignedShortLE(AmFrameLayout.HEADER_LENGTH_OFFSET));
        assertEquals(AmFrameEncoder.COPY_THRESHOLD + 1, prefix.getUnsignedIntLE(AmFrameLayout.PAYLOAD_LENGTH_OFFSET));
        assertSame(large, payload, "the payload goes out as its own buffer, not a copy");
        prefix.release();
        payload.release();
        assertEquals(0, large.refCnt());
        assertFalse(enc.finish());
    }

    @Test
    void writePromiseOfGatheredFrameCompletesWithThePayloadWrite() {
        EmbeddedChannel enc = new EmbeddedChannel(encoder());
        var f = enc.write(AmFrame.of(9, 0, Unpooled.EMPTY_BUFFER, bytes(3, 4096)));
        assertFalse(f.isDone(), "not flushed yet");
        enc.flush();
        assertTrue(f.isSuccess());
        assertTrue(enc.finishAndReleaseAll());
    }

    @Test
    void encoderPassesThroughOtherMessages() {
        EmbeddedChannel enc = new EmbeddedChannel(encoder());
        ByteBuf raw = Unpooled.copiedBuffer("raw", StandardCharsets.US_ASCII);
        assertTrue(enc.writeOutbound(raw));
        assertSame(raw, enc.readOutbound());
        raw.release();
        assertFalse(enc.finish());
    }

    @Test
    void decoderFedOneByteAtATimeProducesTheSameFrames() {
        List<Expected> frames = List.of(
                Expected.of(1, 0, 0, 0, 11),
                Expected.of(2, 3, 8, 0, 12),
                Expected.of(3, 0, 24, 100, 13),
                Expected.of(4, 1, 16, AmFrameEncoder.COPY_THRESHOLD + 1, 14));
        ByteBuf wire = encode(frames);
        EmbeddedChannel dec = decoder();
        List<AmFrame> out = new ArrayList<>();
        try {
            while (wire.isReadable()) {
                dec.writeInbound(wire.readRetainedSlice(1));
                for (AmFrame f; (f = dec.readInbound()) != null; ) {
                    out.add(f);
                }
            }
            assertEquals(frames.size(), out.size());
            for (int i = 0; i < frames.size(); i++) {
                frames.get(i).assertMatches(out.get(i));
            }
        } finally {
            out.forEach(AmFrame::release);
            wire.release();
        }
        assertFalse(dec.finish());
    }

    @Test
    void truncatedFrameProducesNothingAndIsCompletedByTheRestOfItsBytes() {
        List<Expected> frames = List.of(Expected.of(7, 0, 16, 3000, 21));
        ByteBuf wire = encode(frames);
        int total = wire.readableBytes();
        EmbeddedChannel dec = decoder();
        // Prefix only, then prefix and part of the header, then all but the last byte: nothing comes out.
        for (int cut : new int[] {3, AmFrameLayout.PREFIX_LENGTH, AmFrameLayout.PREFIX_LENGTH + 5, total - 1}) {
            int already = total - wire.readableBytes();
            assertFalse(dec.writeInbound(wire.readRetainedSlice(cut - already)), "nothing decoded from " + cut
                    + " of " + total + " bytes");
        }
        assertTrue(dec.writeInbound(wire.readRetainedSlice(1)), "the last byte completes the kept bytes");
        wire.release();
        readAndCheck(dec, frames);
        assertFalse(dec.finish());
    }

    @Test
    void streamClosedMidFrameDeliversNoPartialFrameAndReportsHowMuchArrived() {
        ByteBuf wire = encode(List.of(Expected.of(7, 0, 16, 3000, 22)));
        int received = wire.readableBytes() - 10;
        EmbeddedChannel dec = decoder();
        assertFalse(dec.writeInbound(wire.readRetainedSlice(received)));
        wire.release();
        CorruptedFrameException e = assertThrows(CorruptedFrameException.class, dec::finish);
        assertTrue(e.getMessage().contains(received + " bytes"), e.getMessage());
        assertNull(dec.readInbound(), "a partial frame is not delivered on close");
    }

    @Test
    void streamClosedBetweenFramesIsClean() {
        List<Expected> frames = List.of(Expected.of(7, 0, 16, 30, 23));
        EmbeddedChannel dec = decoder();
        assertTrue(dec.writeInbound(encode(frames)));
        assertTrue(dec.finish());
        readAndCheck(dec, frames);
    }

    private static ByteBuf prefix(int amId, int headerLength, long payloadLength) {
        return Unpooled.buffer(AmFrameLayout.PREFIX_LENGTH)
                .writeByte(amId).writeByte(0).writeShortLE(headerLength).writeIntLE((int) payloadLength);
    }

    /**
     * After a decode failure the bad prefix stays in the decoder's cumulation, so closing the channel decodes it
     * again and reports the same error once more; the test only needs the channel closed and everything released.
     */
    private static void closeAfterFailure(EmbeddedChannel dec) {
        try {
            dec.finishAndReleaseAll();
        } catch (DecoderException expectedAgainOnClose) {
            // see above
        }
        assertFalse(dec.isOpen());
    }

    @Test
    void headerLengthOverTheLimitIsRejectedBeforeTheBodyArrives() {
        EmbeddedChannel dec = decoder();
        // Only the prefix is sent: the limit is checked before any of the body is buffered.
        DecoderException e = assertThrows(DecoderException.class,
                () -> dec.writeInbound(prefix(3, MAX_HEADER + 1, 0)));
        TooLongFrameException tooLong = assertInstanceOf(TooLongFrameException.class,
                e instanceof TooLongFrameException ? e : e.getCause());
        assertTrue(tooLong.getMessage().contains("header length " + (MAX_HEADER + 1)), tooLong.getMessage());
        assertTrue(tooLong.getMessage().contains("limit " + MAX_HEADER), tooLong.getMessage());
        assertNull(dec.readInbound());
        closeAfterFailure(dec);
    }

    @Test
    void headerLengthAtTheLimitIsAccepted() {
        List<Expected> frames = List.of(Expected.of(3, 0, MAX_HEADER, 0, 31));
        EmbeddedChannel dec = decoder();
        assertTrue(dec.writeInbound(encode(frames)));
        readAndCheck(dec, frames);
        assertFalse(dec.finish());
    }

    @Test
    void payloadLengthOverTheLimitIsRejectedBeforeTheBodyArrives() {
        EmbeddedChannel dec = decoder();
        DecoderException e = assertThrows(DecoderException.class,
                () -> dec.writeInbound(prefix(3, 8, MAX_PAYLOAD + 1)));
        TooLongFrameException tooLong = assertInstanceOf(TooLongFrameException.class,
                e instanceof TooLongFrameException ? e : e.getCause());
        assertTrue(tooLong.getMessage().contains("payload length " + (MAX_PAYLOAD + 1)), tooLong.getMessage());
        assertTrue(tooLong.getMessage().contains("limit " + MAX_PAYLOAD), tooLong.getMessage());
        closeAfterFailure(dec);
    }

    @Test
    void payloadLengthWithTopBitSetIsReadUnsignedAndRejected() {
        EmbeddedChannel dec = decoder();
        DecoderException e = assertThrows(DecoderException.class,
                () -> dec.writeInbound(prefix(3, 0, 0xffff_ffffL)));
        Throwable tooLong = e instanceof TooLongFrameException ? e : e.getCause();
        assertInstanceOf(TooLongFrameException.class, tooLong);
        assertTrue(tooLong.getMessage().contains("payload length 4294967295"), tooLong.getMessage());
        closeAfterFailure(dec);
    }

    @Test
    void amIdZeroIsRejectedAsCorrupt() {
        EmbeddedChannel dec = decoder();
        ByteBuf garbage = prefix(0, 0, 0).writeBytes(new byte[16]);
        DecoderException e = assertThrows(DecoderException.class, () -> dec.writeInbound(garbage));
        assertInstanceOf(CorruptedFrameException.class, e instanceof CorruptedFrameException ? e : e.getCause());
        closeAfterFailure(dec);
    }

    @Test
    void corruptFrameAfterGoodOnesStillDeliversTheGoodOnes() {
        List<Expected> frames = List.of(Expected.of(1, 0, 8, 10, 41), Expected.of(2, 0, 8, 20, 42));
        ByteBuf wire = encode(frames);
        wire.writeBytes(new byte[AmFrameLayout.PREFIX_LENGTH]); // am id 0
        EmbeddedChannel dec = decoder();
        assertThrows(CorruptedFrameException.class, () -> dec.writeInbound(wire));
        readAndCheck(dec, frames);
        closeAfterFailure(dec);
    }
}
