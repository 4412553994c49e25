package io.nucx.it;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;

import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * The messages a test sends: sizes from 0 B to 4 MiB (mostly small, log-uniform up to 64 KiB, every 100th 1 MiB,
 * every 500th 4 MiB, the first few at the protocol boundaries), each filled with bytes derived from its index so
 * the receiver can check every byte without being told them.
 */
final class MessagePlan {

    static final int MAX_SIZE = 4 << 20;
    /** tcp's segment is 128 KiB, shm's and self's 64 KiB: the edges of both. */
    private static final int[] EDGES = {0, 1, 7, 8, 8183, 8184, 8185, 8192, 65527, 65528, 65529, 65536, 131063,
        131064, 131065, 131072, MAX_SIZE};

    private MessagePlan() {
    }

    static int size(int index) {
        if (index < EDGES.length) {
            return EDGES[index];
        }
        if (index % 500 == 0) {
            return MAX_SIZE;
        }
        if (index % 100 == 0) {
            return 1 << 20;
        }
        SplittableRandom r = new SplittableRandom(index * 0x9E3779B97F4A7C15L);
        return (int) Math.pow(2, r.nextDouble() * 16) - 1; // 0 .. 65535
    }

    /** Works on plain arrays: under PARANOID leak detection every per-byte access to a ByteBuf records a trace. */
    static ByteBuf content(int index) {
        return Unpooled.wrappedBuffer(bytes(index, size(index)));
    }

    /** Message {@code index} at a size of the caller's choosing. */
    static ByteBuf content(int index, int n) {
        return Unpooled.wrappedBuffer(bytes(index, n));
    }

    /** Message {@code index} at size {@code n} in a direct buffer (what the zero-copy protocols send from). */
    static ByteBuf directContent(int index, int n) {
        return ByteBufAllocator.DEFAULT.directBuffer(n).writeBytes(bytes(index, n));
    }

    private static byte[] bytes(int index, int n) {
        byte[] b = new byte[n];
        SplittableRandom r = new SplittableRandom(index);
        int i = 0;
        for (; i + 8 <= n; i += 8) {
            long v = r.nextLong();
            for (int k = 0; k < 8; k++) {
                b[i + k] = (byte) (v >>> (8 * k));
            }
        }
        long last = r.nextLong();
        for (; i < n; i++) {
            b[i] = (byte) (last >>> (8 * (i & 7)));
        }
        return b;
    }

    /** Null when {@code actual} is message {@code index} byte for byte; otherwise what differs. */
    static String check(int index, ByteBuf actual) {
        return check(index, size(index), actual);
    }

    /** As {@link #check(int, ByteBuf)} for message {@code index} at size {@code n}. */
    static String check(int index, int n, ByteBuf actual) {
        if (actual.readableBytes() != n) {
            return "message " + index + ": " + actual.readableBytes() + " bytes, expected " + n;
        }
        byte[] got = new byte[n];
        actual.getBytes(actual.readerIndex(), got);
        int at = Arrays.mismatch(bytes(index, n), got);
        return at < 0 ? null : "message " + index + ": byte " + at + " differs";
    }
}
