package io.nucx.examples.soak;

import java.util.SplittableRandom;

/**
 * What a soak message carries, derived from its tag alone, so the hub checks every byte without being told: tag =
 * {@code peer:u16 | endpoint:u16 | sequence:u32}; size from the sequence (mixed: empty, short, bcopy, multi-fragment,
 * rendezvous up to 4 MiB); bytes from a generator seeded with the tag.
 */
final class SoakPayload {

    private SoakPayload() {
    }

    static long tag(int peer, int endpoint, long sequence) {
        return ((long) peer << 48) | ((long) (endpoint & 0xffff) << 32) | (sequence & 0xffffffffL);
    }

    static int peer(long tag) {
        return (int) (tag >>> 48);
    }

    static int size(long tag) {
        long seq = tag & 0xffffffffL;
        if (seq % 997 == 0) {
            return 4 << 20;
        }
        if (seq % 101 == 0) {
            return 1 << 20;
        }
        SplittableRandom r = new SplittableRandom(tag * 0x9E3779B97F4A7C15L);
        return (int) Math.pow(2, r.nextDouble() * 17) - 1; // 0 .. 128 KiB
    }

    static byte[] bytes(long tag) {
        byte[] b = new byte[size(tag)];
        new SplittableRandom(tag).nextBytes(b);
        return b;
    }
}
