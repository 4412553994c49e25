package io.nucx;

import io.netty.buffer.ByteBufAllocator;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;

/**
 * Takes a JVM's first direct buffer from Netty's default allocator on a helper thread while the first worker starts,
 * so that the first message sent does not wait for it on the worker's loop.
 *
 * <p>Why: Netty 4.2.18's allocators make JFR events ({@code io.netty.buffer.AllocateChunkEvent} and its kin) at their
 * first chunk, whether or not a recording runs, and loading an event class goes through JFR's class instrumentation,
 * which runs in the interpreter and which the AOT cache cannot hold (JFR event classes are left out of it). On JDK 25
 * that first direct buffer took 180-220 ms from the cache, 7-12 ms with {@code -Dio.netty.jfr.enabled=false}. A worker
 * takes its first on its loop, for a wireup message or for the first message its application sends (the eager
 * copy), so the first message waited that long, and every endpoint of the loop with it. A worker's start keeps its caller and its loop busy for
 * a few hundred milliseconds in a fresh JVM, which leaves another processor for this.
 */
final class AllocatorPrimer {

    /** Completes once the first buffer was taken and given back (or the attempt failed); null until asked. */
    private static volatile CompletableFuture<Void> primed;

    private AllocatorPrimer() {
    }

    /** The priming started in this JVM, or null if none has been. */
    static CompletableFuture<Void> priming() {
        return primed;
    }

    /**
     * Starts priming on {@code executor} the first time it is called in this JVM; later calls do nothing. Only speed
     * is at stake: an executor that refuses, or an allocation that fails, leaves the first message to pay as before.
     *
     * @return the priming, done when the first buffer has been taken and given back
     */
    static CompletableFuture<Void> primeOnce(Executor executor) {
        CompletableFuture<Void> p = primed;
        if (p != null) {
            return p;
        }
        synchronized (AllocatorPrimer.class) {
            if (primed == null) {
                CompletableFuture<Void> started = new CompletableFuture<>();
                try {
                    executor.execute(() -> {
                        try {
                            ByteBufAllocator.DEFAULT.directBuffer(1).release();
                            started.complete(null);
                        } catch (Throwable e) {
                            started.completeExceptionally(e);
                        }
                    });
                } catch (RejectedExecutionException e) {
                    started.completeExceptionally(e);
                }
                primed = started;
            }
            return primed;
        }
    }
}
