package io.nucx.transport.testsuite;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** Byte patterns tests write into memory and check, each byte a function of its offset and a seed. */
public final class Patterns {

    private Patterns() {
    }

    /** The byte expected at absolute offset {@code i} of a region filled with {@code seed}. */
    public static byte pattern(long i, int seed) {
        long x = (i + seed) * 0x9E3779B97F4A7C15L;
        return (byte) (x >>> 56);
    }

    /** Fills {@code s}, which stands at absolute offset {@code base}, with {@code seed}'s pattern. */
    public static void fill(MemorySegment s, long base, int seed) {
        for (long i = 0; i < s.byteSize(); i++) {
            s.set(ValueLayout.JAVA_BYTE, i, pattern(base + i, seed));
        }
    }

    /** The absolute offset of the first byte of {@code s} that is not {@code seed}'s pattern, or -1. */
    public static long firstMismatch(MemorySegment s, long base, int seed) {
        for (long i = 0; i < s.byteSize(); i++) {
            if (s.get(ValueLayout.JAVA_BYTE, i) != pattern(base + i, seed)) {
                return base + i;
            }
        }
        return -1;
    }
}
