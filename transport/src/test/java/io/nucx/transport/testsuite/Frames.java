package io.nucx.transport.testsuite;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.nucx.transport.AmFrame;

import java.util.Arrays;

/**
 * Frames the conformance suite sends, each a function of a number, so a receiver (in this JVM or a peer process)
 * checks order and content without being told: {@link #numbered} frames carry their sequence number as an 8-byte
 * header; {@link #sized} frames have any header and payload length.
 */
public final class Frames {

    /** The active-message id of every frame the suite sends. */
    public static final int AM_ID = 5;

    private Frames() {
    }

    /** The payload length of numbered frame {@code seq}: 0 to 16 KiB - 1, all sizes over a few thousand frames. */
    public static int numberedLength(long seq) {
        return (int) (seq * 7919 % 16384);
    }

    static byte contentByte(long seq, int i) {
        return (byte) (seq * 31 + i * 7 + (i >>> 8));
    }

    private static byte[] content(long seq, int n) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = contentByte(seq, i);
        }
        return b;
    }

    /** Frame {@code seq}: header = seq (u64 LE), payload {@link #numberedLength} bytes; heap for even, direct odd. */
    public static AmFrame numbered(long seq) {
        byte[] payload = content(seq, numberedLength(seq));
        ByteBuf p = seq % 2 == 0 ? Unpooled.wrappedBuffer(payload)
                : ByteBufAllocator.DEFAULT.directBuffer(payload.length).writeBytes(payload);
        return AmFrame.of(AM_ID, 0, Unpooled.buffer(8).writeLongLE(seq), p);
    }

    /** Null if {@code f} is numbered frame {@code seq}, else what differs. */
    public static String checkNumbered(AmFrame f, long seq) {
        if (f.amId() != AM_ID || f.header().readableBytes() != 8) {
            return "frame " + seq + ": am id " + f.amId() + ", header " + f.header().readableBytes() + " bytes";
        }
        long got = f.header().getLongLE(f.header().readerIndex());
        if (got != seq) {
            return "expected frame " + seq + ", got " + got;
        }
        return compare("frame " + seq + " payload", f.payload(), content(seq, numberedLength(seq)));
    }

    /** A frame of {@code headerLength} + {@code payloadLength} bytes, content from {@code seed}. */
    public static AmFrame sized(int seed, int headerLength, int payloadLength, boolean direct) {
        ByteBuf h = Unpooled.wrappedBuffer(content(seed, headerLength));
        byte[] payload = content(seed + 1_000_003L, payloadLength);
        ByteBuf p = direct ? ByteBufAllocator.DEFAULT.directBuffer(Math.max(1, payloadLength)).writeBytes(payload)
                : Unpooled.wrappedBuffer(payload);
        return AmFrame.of(AM_ID, 3, h, p);
    }

    /** Null if {@code f} is {@link #sized} frame {@code seed} of those lengths, else what differs. */
    public static String checkSized(AmFrame f, int seed, int headerLength, int payloadLength) {
        if (f.amId() != AM_ID || f.flags() != 3) {
            return "am id " + f.amId() + ", flags " + f.flags();
        }
        String h = compare("header", f.header(), content(seed, headerLength));
        return h != null ? h : compare("payload", f.payload(), content(seed + 1_000_003L, payloadLength));
    }

    private static String compare(String what, ByteBuf got, byte[] expected) {
        // One bulk read: the leak detector checks every single access at PARANOID.
        byte[] actual = new byte[got.readableBytes()];
        got.getBytes(got.readerIndex(), actual);
        if (actual.length != expected.length) {
            return what + " is " + actual.length + " bytes, expected " + expected.length;
        }
        int at = Arrays.mismatch(actual, expected);
        return at < 0 ? null : what + " differs at byte " + at;
    }
}
