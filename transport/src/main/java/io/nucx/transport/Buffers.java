package io.nucx.transport;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.util.IllegalReferenceCountException;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.ReadOnlyBufferException;
import java.util.Objects;

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
    /** A buffer with neither an array nor an address (a composite) is copied into a ring by longs up to this length. */
    private static final int SMALL_COPY = 256;
    /**
     * Copies between a ring and a direct buffer's address up to this length go by words: {@code MemorySegment.copy}
     * calls HotSpot's copy stub for them whatever their length when the two segments overlap, and {@link #ALL_MEMORY}
     * overlaps every native one. The stub costs more than a word or two and less than the checked word loop from a few
     * words on: tag_lat over shm at 8, 64 and 256 bytes (BENCHMARKS.md).
     */
    static final int WORD_COPY_UP_TO = 16;
    private static final ValueLayout.OfLong LONG_LE = ValueLayout.JAVA_LONG_UNALIGNED
            .withOrder(ByteOrder.LITTLE_ENDIAN);

    /**
     * Copies of this many bytes or more go through libc's {@code memmove}; smaller ones through
     * {@code MemorySegment.copy}, where a few cache lines cost less than the call. Measured on this project's machine
     * (AMD EPYC, glibc 2.36, JDK 25): HotSpot's copy stub moved 16 KiB–1 MiB between two processes' shared memory at
     * half glibc's rate or less, and at a third of it in the machine's slow mode (see BENCHMARKS.md); at 1–4 KiB the
     * two were even.
     */
    public static final int LIBC_COPY_FROM = 4096;
    /** Copies up to this size run without a thread-state change (a critical downcall), holding off safepoints. */
    private static final long CRITICAL_COPY_UP_TO = 1 << 20;
    /** {@code void *memmove(void *, const void *, size_t)} (the result ignored), critical and ordinary; or null. */
    private static final MethodHandle MEMMOVE_CRITICAL;
    private static final MethodHandle MEMMOVE;

    static {
        Linker linker = Linker.nativeLinker();
        MemorySegment memmove = linker.defaultLookup().find("memmove").orElse(null);
        FunctionDescriptor fd = FunctionDescriptor.ofVoid(ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG,
                ValueLayout.JAVA_LONG);
        MEMMOVE_CRITICAL = memmove == null ? null : linker.downcallHandle(memmove, fd, Linker.Option.critical(false));
        MEMMOVE = memmove == null ? null : linker.downcallHandle(memmove, fd);
    }

    /**
     * Copies {@code length} bytes from native address {@code src} to {@code dst} (the ranges may overlap). The caller
     * has checked both ranges and that their memory stays mapped for the call: nothing is checked here.
     */
    public static void copyMemory(long src, long dst, long length) {
        if (length < LIBC_COPY_FROM || MEMMOVE == null
                || (length < ALIASED_BY_STUB_BELOW && pageAliased(src, dst))) {
            MemorySegment.copy(ALL_MEMORY, src, ALL_MEMORY, dst, length);
            return;
        }
        try {
            if (length <= CRITICAL_COPY_UP_TO) {
                MEMMOVE_CRITICAL.invokeExact(dst, src, length);
            } else {
                MEMMOVE.invokeExact(dst, src, length);
            }
        } catch (Throwable t) {
            throw new IllegalStateException("memmove of " + length + " bytes failed", t);
        }
    }

    /**
     * Page-aliased copies ({@link #pageAliased}) below this go through HotSpot's stub; from it glibc leaves {@code rep
     * movsb} (a 1 MiB copy ran as fast at distance 1 as at 16) and stays the faster copy.
     */
    private static final long ALIASED_BY_STUB_BELOW = 1 << 20;

    /**
     * Whether {@code dst} lies 1 to 15 bytes past {@code src} modulo a 4 KiB page. There this machine's {@code rep
     * movsb}, which glibc's memmove takes from 4 KiB to about 256 KiB, runs at a tenth to a twentieth of its rate:
     * 64 KiB in cache took 20-26 us at distance 8 against 1.2-2.2 at 0, 24 and 64 (AMD EPYC, glibc 2.36;
     * BENCHMARKS.md), a known flaw of AMD's fast short {@code rep movsb}. HotSpot's copy stub, a loop of vector moves,
     * runs those at the full rate. Before shm's ring placed its payloads, 0.35-0.45 % of its large copies met one.
     */
    public static boolean pageAliased(long src, long dst) {
        long distance = (dst - src) & 4095;
        return distance != 0 && distance < 16;
    }

    private Buffers() {
    }

    /**
     * Copies {@code length} bytes from {@code src} at {@code srcIndex} to {@code dst} at {@code dstIndex} (indices left
     * alone; the two ranges do not overlap), after the checks Netty's {@code setBytes} makes: both live, both ranges
     * inside, {@code dst} writable. Past {@link #SMALL}, between two buffers with memory addresses (Netty's direct
     * buffers), one native copy; between such a buffer and a heap one, one copy with no NIO view made.
     */
    public static void copy(ByteBuf src, int srcIndex, ByteBuf dst, int dstIndex, int length) {
        if (length <= SMALL) {
            int i = 0; // getLongLE and setLongLE check each word
            for (; i + Long.BYTES <= length; i += Long.BYTES) {
                dst.setLongLE(dstIndex + i, src.getLongLE(srcIndex + i));
            }
            for (; i < length; i++) {
                dst.setByte(dstIndex + i, src.getByte(srcIndex + i));
            }
            return;
        }
        checkRange(src, srcIndex, length);
        checkRange(dst, dstIndex, length);
        if (dst.isReadOnly()) {
            throw new ReadOnlyBufferException();
        }
        if (src.hasMemoryAddress() && dst.hasMemoryAddress()) {
            copyMemory(src.memoryAddress() + srcIndex, dst.memoryAddress() + dstIndex, length);
        } else if (src.hasMemoryAddress() && dst.hasArray()) {
            // Netty's getBytes into an array copies a direct buffer through a NIO duplicate, an object per call.
            MemorySegment.copy(ALL_MEMORY, ValueLayout.JAVA_BYTE, src.memoryAddress() + srcIndex, dst.array(),
                    dst.arrayOffset() + dstIndex, length);
        } else if (src.hasArray() && dst.hasMemoryAddress()) {
            MemorySegment.copy(src.array(), src.arrayOffset() + srcIndex, ALL_MEMORY, ValueLayout.JAVA_BYTE,
                    dst.memoryAddress() + dstIndex, length);
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
        checkRange(dst, index, length);
        if (dst.isReadOnly()) {
            throw new ReadOnlyBufferException();
        }
        if (dst.hasArray()) {
            MemorySegment.copy(src, ValueLayout.JAVA_BYTE, offset, dst.array(), dst.arrayOffset() + index, length);
        } else if (dst.hasMemoryAddress()) {
            long address = dst.memoryAddress() + index;
            if (length <= WORD_COPY_UP_TO) {
                // By words: MemorySegment.copy's own small-copy loop is skipped when the two segments overlap, and
                // ALL_MEMORY overlaps every native segment, so it would call the copy stub even for 8 bytes.
                Objects.checkFromIndexSize(offset, length, src.byteSize());
                int i = 0;
                for (; i + Long.BYTES <= length; i += Long.BYTES) {
                    ALL_MEMORY.set(LONG_LE, address + i, src.get(LONG_LE, offset + i));
                }
                for (; i < length; i++) {
                    ALL_MEMORY.set(ValueLayout.JAVA_BYTE, address + i, src.get(ValueLayout.JAVA_BYTE, offset + i));
                }
            } else if (length >= LIBC_COPY_FROM && src.isNative()) {
                Objects.checkFromIndexSize(offset, length, src.byteSize());
                copyMemory(src.address() + offset, address, length);
            } else {
                MemorySegment.copy(src, offset, ALL_MEMORY, address, length);
            }
        } else {
            dst.setBytes(index, src.asSlice(offset, length).asByteBuffer());
        }
    }

    /**
     * Bytes {@code [index, index + length)} of {@code buf} as one run of native memory, for a system call or a device
     * to read or write, or null when they are not one (heap memory, which the GC moves; a composite of several runs).
     * From the buffer's memory address when it has one (one segment object; its NIO view would make a duplicate
     * buffer per call); the segment is valid while the buffer is held. Checks the range and that the buffer is live.
     */
    public static MemorySegment nativeRun(ByteBuf buf, int index, int length) {
        if (!buf.isDirect()) {
            return null;
        }
        if (buf.hasMemoryAddress()) {
            if (buf.refCnt() == 0) {
                throw new IllegalReferenceCountException(0);
            }
            Objects.checkFromIndexSize(index, length, buf.capacity());
            return ALL_MEMORY.asSlice(buf.memoryAddress() + index, length);
        }
        return buf.nioBufferCount() == 1 ? MemorySegment.ofBuffer(buf.nioBuffer(index, length)) : null;
    }

    /**
     * Copies {@code src}'s readable bytes into {@code dst} at {@code at} (the buffer's indices left alone), without
     * allocating when the buffer is on the heap or has a memory address (Netty 4.2's direct buffers have one on JDK 25
     * even without {@code sun.misc.Unsafe}: it allocates them through FFM), large ones by {@link #copyMemory}. Only a
     * buffer with neither, a composite, goes through its NIO views. The rings' write of a record's payload.
     */
    public static void copyIn(ByteBuf src, MemorySegment dst, long at) {
        int length = src.readableBytes();
        if (length == 0) {
            return;
        }
        int from = src.readerIndex();
        if (src.hasArray()) {
            MemorySegment.copy(src.array(), src.arrayOffset() + from, dst, ValueLayout.JAVA_BYTE, at, length);
            return;
        }
        if (src.hasMemoryAddress()) {
            // Straight from the buffer's memory: ByteBuf.getLongLE checks the index and the reference count on every
            // word, a third of a small copy's time, and nioBuffers allocates a view per call. One check here that the
            // buffer is live, which those made.
            if (src.refCnt() == 0) {
                throw new IllegalReferenceCountException(0);
            }
            long address = src.memoryAddress() + from;
            if (length > WORD_COPY_UP_TO && dst.isNative()) {
                Objects.checkFromIndexSize(at, length, dst.byteSize());
                copyMemory(address, dst.address() + at, length);
                return;
            }
            if (length > WORD_COPY_UP_TO) {
                MemorySegment.copy(ALL_MEMORY, address, dst, at, length);
                return;
            }
            int i = 0;
            for (; i + Long.BYTES <= length; i += Long.BYTES) {
                dst.set(LONG_LE, at + i, ALL_MEMORY.get(LONG_LE, address + i));
            }
            for (; i < length; i++) {
                dst.set(ValueLayout.JAVA_BYTE, at + i, ALL_MEMORY.get(ValueLayout.JAVA_BYTE, address + i));
            }
            return;
        }
        if (length <= SMALL_COPY) {
            int i = 0;
            for (; i + Long.BYTES <= length; i += Long.BYTES) {
                dst.set(LONG_LE, at + i, src.getLongLE(from + i));
            }
            for (; i < length; i++) {
                dst.set(ValueLayout.JAVA_BYTE, at + i, src.getByte(from + i));
            }
            return;
        }
        for (ByteBuffer nio : src.nioBuffers(from, length)) {
            int n = nio.remaining();
            MemorySegment.copy(MemorySegment.ofBuffer(nio), 0, dst, at, n);
            at += n;
        }
    }

    private static void checkRange(ByteBuf buf, int index, int length) {
        if (buf.refCnt() == 0) {
            throw new IllegalReferenceCountException(0);
        }
        if (length < 0 || index < 0 || index > buf.capacity() - length) {
            throw new IndexOutOfBoundsException("index " + index + " + " + length + " > " + buf.capacity());
        }
    }

    /**
     * {@code length} bytes of {@code src} at {@code offset} in a pooled buffer of {@code alloc}: a heap one, or from
     * {@link #LIBC_COPY_FROM} bytes of native memory on a direct one, so that libc copies them.
     */
    public static ByteBuf copyOut(MemorySegment src, long offset, int length, ByteBufAllocator alloc) {
        if (length >= LIBC_COPY_FROM && src.isNative()) {
            ByteBuf direct = alloc.directBuffer(length, length);
            if (direct.hasMemoryAddress()) {
                Objects.checkFromIndexSize(offset, length, src.byteSize());
                copyMemory(src.address() + offset, direct.memoryAddress(), length);
                return direct.writerIndex(length);
            }
            direct.release();
        }
        ByteBuf buf = alloc.heapBuffer(length, length);
        if (buf.hasArray()) {
            MemorySegment.copy(src, ValueLayout.JAVA_BYTE, offset, buf.array(), buf.arrayOffset(), length);
            buf.writerIndex(length);
        } else {
            buf.writeBytes(src.asSlice(offset, length).asByteBuffer());
        }
        return buf;
    }

    /**
     * {@code buf}'s readable bytes in a new buffer from its allocator, of the same kind and maximum, with room for
     * {@code more} bytes after them (its capacity the allocator's {@code calculateNewCapacity}, a power of two), and
     * {@code buf} released: Netty's own {@code ensureWritable} copies a pooled direct buffer through a NIO view, an
     * object per growth. It always copies (Netty may first grow a pooled buffer in place). The caller has checked the
     * maximum; the new buffer's reader index is 0.
     */
    public static ByteBuf grow(ByteBuf buf, int more) {
        int readable = buf.readableBytes();
        ByteBufAllocator alloc = buf.alloc();
        int capacity = alloc.calculateNewCapacity(readable + more, buf.maxCapacity());
        ByteBuf grown = buf.isDirect() ? alloc.directBuffer(capacity, buf.maxCapacity())
                : alloc.heapBuffer(capacity, buf.maxCapacity());
        try {
            append(buf, buf.readerIndex(), grown, readable);
        } catch (RuntimeException | Error e) {
            grown.release();
            throw e;
        }
        buf.release();
        return grown;
    }

    /** Appends {@code length} bytes of {@code src} at {@code srcIndex} to {@code dst} (its writer index moves). */
    public static ByteBuf append(ByteBuf src, int srcIndex, ByteBuf dst, int length) {
        dst.ensureWritable(length);
        int at = dst.writerIndex();
        copy(src, srcIndex, dst, at, length);
        return dst.writerIndex(at + length);
    }
}
