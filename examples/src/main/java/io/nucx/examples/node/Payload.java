package io.nucx.examples.node;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The bytes of message {@code seq} of stream {@code stream}: a splitmix64 sequence seeded by both, so the receiver
 * checks every byte knowing only the stream, the sequence number and the size. The tag carries both:
 * {@code stream << 32 | seq}. Filled and checked through one NIO view, not per-byte {@code ByteBuf} calls (under
 * PARANOID leak detection each of those records a trace).
 */
final class Payload {

    /** Receives of one stream match on the high half of the tag, whatever the sequence number. */
    static final long STREAM_MASK = 0xFFFF_FFFF_0000_0000L;
    /** Below this a message is sent from the heap, from here on from direct memory (both paths get exercised). */
    private static final int DIRECT_FROM = 64 * 1024;

    private Payload() {
    }

    static long tag(int stream, int seq) {
        return ((long) stream << 32) | (seq & 0xFFFF_FFFFL);
    }

    static int stream(long tag) {
        return (int) (tag >>> 32);
    }

    static int seq(long tag) {
        return (int) tag;
    }

    /**
     * Message {@code seq} of {@code stream}, {@code size} bytes, heap or direct by size. Direct ones come from Netty's
     * unpooled allocator, so the release after the send frees them at once (a wrapped {@code allocateDirect} buffer
     * would wait for a GC, and the JDK's direct-memory limit then stalls allocations, event loops included).
     */
    static ByteBuf message(int stream, int seq, int size) {
        if (size < DIRECT_FROM) {
            ByteBuffer b = ByteBuffer.allocate(size);
            fill(b.order(ByteOrder.LITTLE_ENDIAN), seed(stream, seq));
            return Unpooled.wrappedBuffer(b.clear());
        }
        ByteBuf buf = Unpooled.directBuffer(size, size);
        fill(buf.nioBuffer(0, size).order(ByteOrder.LITTLE_ENDIAN), seed(stream, seq));
        return buf.writerIndex(size);
    }

    /** Null when {@code actual} is message {@code seq} of {@code stream} of {@code size} bytes; else what differs. */
    static String check(int stream, int seq, int size, ByteBuf actual) {
        if (actual.readableBytes() != size) {
            return "stream " + stream + " message " + seq + ": " + actual.readableBytes() + " bytes, expected " + size;
        }
        ByteBuffer b = actual.nioBufferCount() == 1 ? actual.nioBuffer()
                : ByteBuffer.wrap(ByteBufUtil.getBytes(actual));
        long at = mismatch(b.order(ByteOrder.LITTLE_ENDIAN), seed(stream, seq));
        return at < 0 ? null : "stream " + stream + " message " + seq + ": byte " + at + " differs";
    }

    private static long seed(int stream, int seq) {
        return mix(tag(stream, seq) ^ 0x5DEECE66DL);
    }

    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    private static long word(long seed, long index) {
        return mix(seed + index * 0x9E3779B97F4A7C15L);
    }

    private static void fill(ByteBuffer b, long seed) {
        int n = b.remaining();
        int words = n >>> 3;
        for (int i = 0; i < words; i++) {
            b.putLong(i << 3, word(seed, i));
        }
        long last = word(seed, words);
        for (int i = words << 3; i < n; i++) {
            b.put(i, (byte) (last >>> ((i & 7) << 3)));
        }
    }

    private static long mismatch(ByteBuffer b, long seed) {
        int base = b.position();
        int n = b.remaining();
        int words = n >>> 3;
        for (int i = 0; i < words; i++) {
            if (b.getLong(base + (i << 3)) != word(seed, i)) {
                return (long) i << 3;
            }
        }
        long last = word(seed, words);
        for (int i = words << 3; i < n; i++) {
            if (b.get(base + i) != (byte) (last >>> ((i & 7) << 3))) {
                return i;
            }
        }
        return -1;
    }

    /** "0,100,8k,1m,64m": a size list, message i taking entry i modulo its length. */
    static int[] sizes(String spec) {
        List<Integer> out = new ArrayList<>();
        for (String s : spec.split(",")) {
            String t = s.trim().toLowerCase(Locale.ROOT);
            long unit = 1;
            if (t.endsWith("k")) {
                unit = 1024;
            } else if (t.endsWith("m")) {
                unit = 1024 * 1024;
            }
            if (unit != 1) {
                t = t.substring(0, t.length() - 1);
            }
            long v;
            try {
                v = Long.parseLong(t) * unit;
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("bad size '" + s + "' in '" + spec + "'");
            }
            if (v < 0 || v > Integer.MAX_VALUE - 8) {
                throw new IllegalArgumentException("size out of range: '" + s + "'");
            }
            out.add((int) v);
        }
        return out.stream().mapToInt(Integer::intValue).toArray();
    }
}
