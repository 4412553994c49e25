package io.nucx;

import io.netty.channel.EventLoop;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.GlobalEventExecutor;
import io.netty.util.concurrent.Promise;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One worker per event loop for the channel pair ({@link NucxChannel}, {@link NucxServerChannel}), started on demand
 * the first time a channel of that loop connects or is accepted, with the configuration of the environment
 * ({@code NUCX_*}). A worker is bound to its loop, so every endpoint of the loop's channels is served there, lock-free;
 * the loop's channels share its ifaces and connections. It closes with {@link NucxEventLoopGroup}'s shutdown, or is
 * forgotten when the loop terminates. Once its group's shutdown began, a loop starts no worker: a channel connecting or
 * accepted there meanwhile fails, where it would have started a worker nothing closes.
 */
final class LoopWorkers {

    private static final Map<EventLoop, Future<Worker>> WORKERS = new ConcurrentHashMap<>();
    private static final AtomicInteger NEXT = new AtomicInteger();

    private LoopWorkers() {
    }

    /** The worker of {@code loop}, starting it if need be; the future is notified on {@code loop}. */
    static Future<Worker> of(EventLoop loop) {
        Future<Worker> w = WORKERS.get(loop);
        if (w != null) {
            return w;
        }
        return WORKERS.computeIfAbsent(loop, l -> {
            Future<Worker> started = new NucxBootstrap().group(l).name("loop-" + NEXT.incrementAndGet()).startAsync();
            l.terminationFuture().addListener(f -> WORKERS.remove(l, started));
            return started;
        });
    }

    /**
     * Closes the workers of {@code loops} (those started), each gracefully; the future completes when all did. Each
     * loop's entry becomes a failed future in the same step, so that {@link #of} starts no worker there any more.
     */
    static Future<Void> close(Iterable<EventExecutor> loops) {
        List<Future<Worker>> started = new ArrayList<>();
        for (EventExecutor e : loops) {
            if (!(e instanceof EventLoop l)) {
                continue;
            }
            Future<Worker> refused = l.newFailedFuture(new RejectedExecutionException("the event loop group of " + l
                    + " is shutting down: it starts no nucx worker any more"));
            Future<Worker> w = WORKERS.put(l, refused);
            l.terminationFuture().addListener(f -> WORKERS.remove(l, refused));
            if (w != null) {
                started.add(w);
            }
        }
        Promise<Void> all = GlobalEventExecutor.INSTANCE.newPromise();
        if (started.isEmpty()) {
            return all.setSuccess(null);
        }
        AtomicInteger left = new AtomicInteger(started.size());
        for (Future<Worker> w : started) {
            w.addListener(f -> {
                if (f.isSuccess()) {
                    ((Worker) f.getNow()).close().addListener(c -> {
                        if (left.decrementAndGet() == 0) {
                            all.trySuccess(null);
                        }
                    });
                } else if (left.decrementAndGet() == 0) {
                    all.trySuccess(null);
                }
            });
        }
        return all;
    }
}
