package io.nucx;

import io.netty.buffer.ByteBufAllocator;

/**
 * Takes a JVM's first direct buffer from Netty's default allocator while the first worker starts, before its loop
 * has work, so that the first message sent does not wait for it on the loop.
 *
 * <p>Why: Netty 4.2.18's allocators make JFR events ({@code io.netty.buffer.AllocateChunkEvent} and its kin) at their
 * first chunk, whether or not a recording runs, and loading an event class goes through JFR's class instrumentation,
 * which runs in the interpreter and which the AOT cache cannot hold (JFR event classes are left out of it): 60-220 ms
 * on JDK 25 in a fresh JVM from the cache, as good as nothing with {@code -Dio.netty.jfr.enabled=false}. A worker takes
 * its first buffer on its loop, for a wireup message or for the first message its application sends (the eager copy),
 * so that message waited that long, and every endpoint of the loop with it. Done on a helper thread beside the start
 * instead, it gained nothing where the worker's loops spin on the machine's two processors: the helper was still at
 * it when the first message came, which then waited for it all the same.
 */
final class AllocatorPrimer {

    private static volatile boolean primed;

    private AllocatorPrimer() {
    }

    /**
     * Takes one direct buffer and gives it back, the first time in this JVM; later calls return at once. Only speed is
     * at stake: a failure is left to the first message to meet again.
     */
    static void primeOnce() {
        if (primed) {
            return;
        }
        synchronized (AllocatorPrimer.class) {
            if (!primed) {
                try {
                    ByteBufAllocator.DEFAULT.directBuffer(1).release();
                } catch (RuntimeException | LinkageError | OutOfMemoryError e) {
                    // the allocator will say so to whoever takes a buffer next
                } finally {
                    primed = true;
                }
            }
        }
    }
}
