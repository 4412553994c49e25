package io.nucx.transport;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Copies between buffers on the per-message path without the NIO views Netty makes when it may not use
 * {@code sun.misc.Unsafe} (its default on JDK 25): {@code writeBytes} between two direct buffers then creates a
 * {@code ByteBuffer} slice or duplicate per call, an allocation per message. Small copies go eight bytes at a time;
 * larger ones go from address to address, or through a heap buffer's array.
 */
public final class Buffers {

    /** Copies up to this many bytes by longs (a header, a short message). */
    public static final int SMALL = 64;
    /**
     * All of this process's memory as one segment, for a direct buffer's bytes at its {@code memoryAddress} with no
     * segment made per copy: Netty without {@code sun.misc.Unsafe} (its default on JDK 25) still reports the address
     * of its direct buffers (native access granted).
     */
    public static final MemorySegment ALL_MEMORY = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);

    private Buffers() {
    }

    /**
     * Copies {@code length} bytes from {@code src} at {@code srcIndex} to {@code dst} at {@code dstIndex} (indices left
     * alone). Past {@link #SMALL}, between two buffers with memory addresses (Netty's direct buffers), one native copy
     * after the checks Netty's own would make: both live, both ranges inside.
     */
    public static void copy(ByteBuf src, int srcIndex, ByteBuf dst, int dstIndex, int length) {
        if (length > SMALL && src.hasMemoryAddress() && dst.hasMemoryAddress()) {
            checkRange(src, srcIndex, length);
            checkRange(dst, dstIndex, length);
            MemorySegment.copy(ALL_MEMORY, src.memoryAddress() + srcIndex, ALL_MEMORY,
                    dst.memoryAddress() + dstIndex, length);
        } else if (length <= SMALL) {
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

    /**
     * Copies {@code length} bytes of {@code src} at {@code offset} into {@code dst} at {@code index} (its indices left
     * alone), after checking that {@code dst} is live and has the room: one copy, with no segment or NIO view made for
     * a heap buffer or a direct one whose address Netty gives.
     */
    public static void copy(MemorySegment src, long offset, ByteBuf dst, int index, int length) {
        if (dst.refCnt() == 0) {
            throw new io.netty.util.IllegalReferenceCountException(0);
        }
        if (index < 0 || index > dst.capacity() - length) {
            throw new IndexOutOfBoundsException("index " + index + " + " + length + " > " + dst.capacity());
        }
        if (dst.hasArray()) {
            MemorySegment.copy(src, ValueLayout.JAVA_BYTE, offset, dst.array(), dst.arrayOffset() + index, length);
        } else if (dst.hasMemoryAddress()) {
            MemorySegment.copy(src, offset, ALL_MEMORY, dst.memoryAddress() + index, length);
        } else {
            dst.setBytes(index, src.asSlice(offset, length).asByteBuffer());
        }
    }

    private static void checkRange(ByteBuf buf, int index, int length) {
        if (buf.refCnt() == 0) {
            throw new io.netty.util.IllegalReferenceCountException(0);
        }
        if (length < 0 || index < 0 || index > buf.capacity() - length) {
            throw new IndexOutOfBoundsException("index " + index + " + " + length + " > " + buf.capacity());
        }
    }

    /** {@code length} bytes of {@code src} at {@code offset} in a pooled heap buffer of {@code alloc}. */
    public static ByteBuf copyOut(MemorySegment src, long offset, int length, ByteBufAllocator alloc) {
        ByteBuf buf = alloc.heapBuffer(length, length);
        if (buf.hasArray()) {
            MemorySegment.copy(src, ValueLayout.JAVA_BYTE, offset, buf.array(), buf.arrayOffset(), length);
            buf.writerIndex(length);
        } else {
            buf.writeBytes(src.asSlice(offset, length).asByteBuffer());
        }
        return buf;
    }

    /** Appends {@code length} bytes of {@code src} at {@code srcIndex} to {@code dst} (its writer index moves). */
    public static ByteBuf append(ByteBuf src, int srcIndex, ByteBuf dst, int length) {
        dst.ensureWritable(length);
        int at = dst.writerIndex();
        copy(src, srcIndex, dst, at, length);
        return dst.writerIndex(at + length);
    }
}
