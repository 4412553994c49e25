package io.nucx.transport;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.util.IllegalReferenceCountException;
import io.nucx.transport.testing.RandomCases;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ReadOnlyBufferException;
import java.util.Arrays;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link Buffers}' copies give the bytes Netty's own copies would, on every path they take: by longs (up to
 * {@link Buffers#SMALL}), through a heap array, between an address and a heap array, from address to address below
 * {@link Buffers#LIBC_COPY_FROM} and by libc's memmove from it (a critical call up to 1 MiB, an ordinary one above),
 * {@link Buffers#copyMemory} between overlapping ranges too; and they refuse a released buffer, a range outside one or
 * a read-only destination, changing nothing.
 */
class BuffersTest {

    private static final int CASES = 80;
    private static final ByteBufAllocator POOLED = PooledByteBufAllocator.DEFAULT;

    /** Lengths around each path's bounds, and any length up to 300 KiB. */
    private static int anyLength(SplittableRandom r) {
        int[] bounds = {0, 1, Buffers.WORD_COPY_UP_TO - 1, Buffers.SMALL, Buffers.SMALL + 1, 255,
            Buffers.LIBC_COPY_FROM - 1, Buffers.LIBC_COPY_FROM, 64 * 1024, 256 * 1024};
        return r.nextBoolean() ? bounds[r.nextInt(bounds.length)] + r.nextInt(3) : r.nextInt(300 * 1024);
    }

    /** A buffer of {@code capacity} random bytes: heap, pooled direct or unpooled direct. */
    private static ByteBuf buffer(SplittableRandom r, int capacity) {
        byte[] bytes = new byte[capacity];
        r.nextBytes(bytes);
        ByteBuf b = switch (r.nextInt(3)) {
            case 0 -> Unpooled.buffer(capacity, capacity);
            case 1 -> POOLED.directBuffer(capacity, capacity);
            default -> Unpooled.directBuffer(capacity, capacity);
        };
        return b.writeBytes(bytes);
    }

    /** {@code size} random bytes of native memory from {@code arena}. */
    private static MemorySegment randomSegment(Arena arena, long size, SplittableRandom r) {
        byte[] bytes = new byte[(int) size];
        r.nextBytes(bytes);
        return arena.allocate(size).copyFrom(MemorySegment.ofArray(bytes));
    }

    private static byte[] bytes(ByteBuf b) {
        byte[] out = new byte[b.capacity()];
        b.getBytes(0, out);
        return out;
    }

    private record Case(int length, int srcAt, int dstAt, int srcSlack, int dstSlack, SplittableRandom more) {
        static Case of(SplittableRandom r) {
            return new Case(anyLength(r), r.nextInt(64), r.nextInt(64), r.nextInt(64), r.nextInt(64), r.split());
        }
    }

    @Test
    void aCopyBetweenTwoBuffersGivesTheBytesNettysWould() {
        RandomCases.forAll("a copy between two buffers gives the bytes Netty's would", CASES, Case::of, c -> {
            SplittableRandom r = c.more();
            ByteBuf src = buffer(r, c.srcAt() + c.length() + c.srcSlack());
            ByteBuf dst = buffer(r, c.dstAt() + c.length() + c.dstSlack());
            try {
                byte[] expected = bytes(dst);
                System.arraycopy(bytes(src), c.srcAt(), expected, c.dstAt(), c.length());
                int srcReader = src.readerIndex();
                int dstWriter = dst.writerIndex();
                Buffers.copy(src, c.srcAt(), dst, c.dstAt(), c.length());
                assertArrayEquals(expected, bytes(dst));
                assertEquals(srcReader, src.readerIndex(), "indices left alone");
                assertEquals(dstWriter, dst.writerIndex(), "indices left alone");
            } finally {
                src.release();
                dst.release();
            }
        });
    }

    @Test
    void copyMemoryBetweenOverlappingRangesMovesAsMemmoveDoes() {
        RandomCases.forAll("copyMemory between overlapping ranges moves as memmove does", CASES, Case::of, c -> {
            // Source and destination within the same bytes, near each other: they overlap whenever the length
            // exceeds the distance, either way round.
            ByteBuf b = POOLED.directBuffer(c.length() + 128, c.length() + 128);
            try {
                byte[] bytes = new byte[b.capacity()];
                c.more().nextBytes(bytes);
                b.writeBytes(bytes);
                System.arraycopy(bytes, c.srcAt(), bytes, c.dstAt(), c.length()); // arraycopy allows overlap
                Buffers.copyMemory(b.memoryAddress() + c.srcAt(), b.memoryAddress() + c.dstAt(), c.length());
                assertArrayEquals(bytes, bytes(b));
            } finally {
                b.release();
            }
        });
    }

    @Test
    void aCopyOneToFifteenBytesPastItsSourceModuloAPageGoesAroundMemmoveAndMovesTheSameBytes() {
        long src = 0x7f00_0000_1040L;
        for (long d : new long[] {1, 8, 15, 4096 + 1, 4096 + 15, (1L << 32) + 8}) {
            assertTrue(Buffers.pageAliased(src, src + d), "distance " + d);
        }
        for (long d : new long[] {0, 16, 64, 4095, 4096, -8, (1L << 32) + 16}) {
            assertEquals(false, Buffers.pageAliased(src, src + d), "distance " + d);
        }
        try (Arena arena = Arena.ofConfined()) {
            int length = 64 * 1024;
            MemorySegment from = arena.allocate(length + 4096, 4096);
            MemorySegment to = arena.allocate(length + 4096, 4096);
            byte[] bytes = new byte[length];
            new SplittableRandom(15).nextBytes(bytes);
            MemorySegment.copy(bytes, 0, from, ValueLayout.JAVA_BYTE, 64, length);
            for (int d : new int[] {1, 8, 15, 16}) {
                to.fill((byte) 0);
                Buffers.copyMemory(from.address() + 64, to.address() + 64 + d, length);
                assertArrayEquals(bytes, to.asSlice(64 + d, length).toArray(ValueLayout.JAVA_BYTE), "distance " + d);
            }
        }
    }

    @Test
    void aCopyOutOfNativeMemoryGivesItsBytes() {
        RandomCases.forAll("a copy out of native memory gives its bytes", CASES, Case::of, c -> {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment src = randomSegment(arena, c.srcAt() + c.length() + c.srcSlack(), c.more());
                byte[] bytes = src.toArray(ValueLayout.JAVA_BYTE);
                byte[] expected = Arrays.copyOfRange(bytes, c.srcAt(), c.srcAt() + c.length());

                ByteBuf out = Buffers.copyOut(src, c.srcAt(), c.length(), POOLED);
                try {
                    assertEquals(c.length(), out.readableBytes());
                    assertArrayEquals(expected, readAll(out));
                } finally {
                    out.release();
                }
                ByteBuf into = buffer(c.more(), c.dstAt() + c.length() + c.dstSlack());
                try {
                    byte[] want = bytes(into);
                    System.arraycopy(expected, 0, want, c.dstAt(), c.length());
                    Buffers.copy(src, c.srcAt(), into, c.dstAt(), c.length());
                    assertArrayEquals(want, bytes(into));
                } finally {
                    into.release();
                }
            }
        });
    }

    @Test
    void aCopyIntoNativeMemoryGivesTheBuffersReadableBytes() {
        RandomCases.forAll("a copy into native memory gives the buffer's readable bytes", CASES, Case::of, c -> {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment dst = randomSegment(arena, c.dstAt() + c.length() + c.dstSlack(), c.more());
                byte[] before = dst.toArray(ValueLayout.JAVA_BYTE);
                ByteBuf src = buffer(c.more(), c.srcAt() + c.length() + c.srcSlack())
                        .setIndex(c.srcAt(), c.srcAt() + c.length());
                try {
                    byte[] want = before.clone();
                    System.arraycopy(bytes(src), c.srcAt(), want, c.dstAt(), c.length());
                    Buffers.copyIn(src, dst, c.dstAt());
                    assertArrayEquals(want, dst.toArray(ValueLayout.JAVA_BYTE));
                    assertEquals(c.srcAt(), src.readerIndex(), "indices left alone");
                } finally {
                    src.release();
                }
            }
        });
    }

    private static byte[] readAll(ByteBuf b) {
        byte[] out = new byte[b.readableBytes()];
        b.getBytes(b.readerIndex(), out);
        return out;
    }

    @Test
    void aGrownBufferHoldsTheReadableBytesWithRoomForMoreAndTheOldOneIsReleased() {
        RandomCases.forAll("a grown buffer holds the readable bytes with room for more", CASES, Case::of, c -> {
            SplittableRandom r = c.more();
            boolean direct = r.nextBoolean();
            int max = 1 << 20;
            ByteBuf old = direct ? POOLED.directBuffer(c.length() + c.srcAt(), max)
                    : POOLED.heapBuffer(c.length() + c.srcAt(), max);
            byte[] content = new byte[c.length() + c.srcAt()];
            r.nextBytes(content);
            old.writeBytes(content).readerIndex(c.srcAt()); // bytes before the reader index are not carried over
            int more = 1 + r.nextInt(64 * 1024);
            ByteBuf grown = Buffers.grow(old, more);
            try {
                assertEquals(0, old.refCnt(), "the old buffer is released");
                assertEquals(direct, grown.isDirect(), "the same kind of buffer");
                assertEquals(max, grown.maxCapacity());
                assertEquals(0, grown.readerIndex());
                assertTrue(grown.writableBytes() >= more, () -> grown.writableBytes() + " writable, " + more + " asked");
                byte[] got = new byte[grown.readableBytes()];
                grown.getBytes(0, got);
                assertArrayEquals(Arrays.copyOfRange(content, c.srcAt(), content.length), got);
            } finally {
                grown.release();
            }
        });
    }

    /** Above 1 MiB the copy is an ordinary downcall, not a critical one: the same bytes. */
    @Test
    void aCopyOfSeveralMebibytesGivesTheSameBytes() {
        int n = 3 * 1024 * 1024 + 5;
        ByteBuf src = buffer(new SplittableRandom(42), n);
        ByteBuf dst = POOLED.directBuffer(n, n);
        try {
            Buffers.append(src, 0, dst, n);
            assertArrayEquals(bytes(src), readAll(dst));
        } finally {
            src.release();
            dst.release();
        }
    }

    @Test
    void aReleasedBufferOrARangeOutsideOneIsRefusedAndNothingChanges() {
        int n = 2 * Buffers.LIBC_COPY_FROM;
        ByteBuf src = buffer(new SplittableRandom(7), n);
        ByteBuf dst = buffer(new SplittableRandom(8), n);
        try {
            byte[] before = bytes(dst);
            assertThrows(IndexOutOfBoundsException.class, () -> Buffers.copy(src, 1, dst, 0, n));
            assertThrows(IndexOutOfBoundsException.class, () -> Buffers.copy(src, 0, dst, 1, n));
            assertThrows(IndexOutOfBoundsException.class, () -> Buffers.copy(src, -1, dst, 0, n - 1));
            assertArrayEquals(before, bytes(dst), "a refused copy changes nothing");
            ByteBuf released = POOLED.directBuffer(n, n).writeZero(n);
            released.release();
            assertThrows(IllegalReferenceCountException.class, () -> Buffers.copy(released, 0, dst, 0, n));
            assertThrows(IllegalReferenceCountException.class, () -> Buffers.copy(src, 0, released, 0, n));
            // Read-only, though its memory address shows through (Netty's read-only wrapper passes it on)
            ByteBuf readOnly = dst.asReadOnly();
            assertThrows(ReadOnlyBufferException.class, () -> Buffers.copy(src, 0, readOnly, 0, n));
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment memory = arena.allocate(n);
                assertThrows(ReadOnlyBufferException.class, () -> Buffers.copy(memory, 0, readOnly, 0, n));
                assertThrows(IndexOutOfBoundsException.class, () -> Buffers.copy(memory, 0, dst, 1, n));
                // A short copy whose source runs past the segment's end is refused before a byte is written
                assertThrows(IndexOutOfBoundsException.class, () -> Buffers.copy(memory, n - 4, dst, 0, 12));
            }
            assertArrayEquals(before, bytes(dst), "a refused copy changes nothing");
            assertTrue(src.refCnt() == 1 && dst.refCnt() == 1);
        } finally {
            src.release();
            dst.release();
        }
    }

    @Test
    void aNativeRunIsTheBuffersOwnMemoryAndOnlyADirectBufferInOnePieceHasOne() {
        ByteBuf direct = POOLED.directBuffer(4096, 4096).writeZero(4096);
        ByteBuf heap = Unpooled.buffer(64).writeZero(64);
        ByteBuf scattered = Unpooled.compositeBuffer().addComponents(true, POOLED.directBuffer(16).writeZero(16),
                POOLED.directBuffer(16).writeZero(16));
        try {
            MemorySegment run = Buffers.nativeRun(direct, 100, 200);
            assertEquals(200, run.byteSize());
            run.set(ValueLayout.JAVA_BYTE, 0, (byte) 7); // writes land in the buffer: its memory, not a copy
            run.set(ValueLayout.JAVA_BYTE, 199, (byte) 9);
            assertEquals(7, direct.getByte(100));
            assertEquals(9, direct.getByte(299));
            assertEquals(0, Buffers.nativeRun(direct, 4096, 0).byteSize());
            assertThrows(IndexOutOfBoundsException.class, () -> Buffers.nativeRun(direct, 4000, 97));
            assertNull(Buffers.nativeRun(heap, 0, 64), "heap memory moves: no run");
            assertNull(Buffers.nativeRun(scattered, 0, 32), "two pieces: no one run");
            ByteBuf released = POOLED.directBuffer(64, 64);
            released.release();
            assertThrows(IllegalReferenceCountException.class, () -> Buffers.nativeRun(released, 0, 8));
        } finally {
            direct.release();
            heap.release();
            scattered.release();
        }
    }
}
