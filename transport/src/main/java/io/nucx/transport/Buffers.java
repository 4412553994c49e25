package io.nucx.transport;

import io.netty.buffer.ByteBuf;

/**
 * Copies between buffers on the per-message path without the NIO views Netty makes when it may not use
 * {@code sun.misc.Unsafe} (its default on JDK 25): {@code writeBytes} between two direct buffers then creates a
 * {@code ByteBuffer} slice or duplicate per call, an allocation per message. Small copies go eight bytes at a time;
 * larger ones into a heap buffer go through its array.
 */
public final class Buffers {

    /** Copies up to this many bytes by longs (a header, a short message). */
    public static final int SMALL = 64;

    private Buffers() {
    }

    /** Copies {@code length} bytes from {@code src} at {@code srcIndex} to {@code dst} at {@code dstIndex}. */
    public static void copy(ByteBuf src, int srcIndex, ByteBuf dst, int dstIndex, int length) {
        if (length <= SMALL) {
            int i = 0;
            for (; i + Long.BYTES <= length; i += Long.BYTES) {
                dst.setLongLE(dstIndex + i, src.getLongLE(srcIndex + i));
            }
            for (; i < length; i++) {
                dst.setByte(dstIndex + i, src.getByte(srcIndex + i));
            }
        } else if (dst.hasArray()) {
            src.getBytes(srcIndex, dst.array(), dst.arrayOffset() + dstIndex, length);
        } else {
            dst.setBytes(dstIndex, src, srcIndex, length);
        }
    }

    /** Appends {@code length} bytes of {@code src} at {@code srcIndex} to {@code dst} (its writer index moves). */
    public static ByteBuf append(ByteBuf src, int srcIndex, ByteBuf dst, int length) {
        dst.ensureWritable(length);
        int at = dst.writerIndex();
        copy(src, srcIndex, dst, at, length);
        return dst.writerIndex(at + length);
    }
}
