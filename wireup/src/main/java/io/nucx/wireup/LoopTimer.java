package io.nucx.wireup;

import io.netty.util.concurrent.EventExecutor;
import io.netty.util.internal.logging.InternalLogger;
import io.netty.util.internal.logging.InternalLoggerFactory;

import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * A worker's periodic work (keepalive, the reaper), timed off its event loop: one JVM-wide daemon thread waits out
 * the period and hands the work to the loop as a task.
 *
 * <p>Why not the loop's own {@code scheduleWithFixedDelay}: while a scheduled task waits in a Netty loop's queue,
 * every pass around the loop reads the clock twice (running the tasks looks whether the queue's head is due, and so
 * does {@code canBlock}), 22 ns each on the test machine, and a worker's keepalive would keep one there for its whole
 * life. A busy-polling shm loop passes around once per message: the two reads were a tenth of a ping-pong's CPU.
 *
 * <p>The period counts from the end of the previous run (fixed delay): a loop that stalled gets one late run, not the
 * missed ones back to back. The work runs on the loop, as before; {@link Periodic#cancel} from the loop means no
 * further run, even one already handed over.
 */
final class LoopTimer {

    private static final InternalLogger LOG = InternalLoggerFactory.getInstance(LoopTimer.class);

    private static final ScheduledThreadPoolExecutor TIMER;

    static {
        TIMER = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "nucx-timer");
            t.setDaemon(true);
            return t;
        });
        TIMER.setRemoveOnCancelPolicy(true);
    }

    private LoopTimer() {
    }

    /** Runs {@code work} on {@code loop} every {@code periodNanos} after its previous run ended, until cancelled. */
    static Periodic everyAfter(EventExecutor loop, long periodNanos, Runnable work) {
        Periodic p = new Periodic(loop, periodNanos, work);
        p.arm();
        return p;
    }

    /** One worker's periodic work. */
    static final class Periodic implements Runnable {
        private final EventExecutor loop;
        private final long periodNanos;
        private final Runnable work;
        private volatile boolean cancelled;
        private volatile ScheduledFuture<?> next;

        private Periodic(EventExecutor loop, long periodNanos, Runnable work) {
            this.loop = loop;
            this.periodNanos = periodNanos;
            this.work = work;
        }

        private void arm() {
            if (!cancelled) {
                next = TIMER.schedule(this::handOver, periodNanos, TimeUnit.NANOSECONDS);
            }
        }

        /** On the timer's thread: the period is over, the loop runs the work. */
        private void handOver() {
            if (cancelled) {
                return;
            }
            try {
                loop.execute(this);
            } catch (RejectedExecutionException shutDown) {
                cancelled = true; // the loop is gone, and with it the worker
            }
        }

        /** On the loop. */
        @Override
        public void run() {
            if (cancelled) {
                return;
            }
            try {
                work.run();
            } catch (RuntimeException e) {
                LOG.warn("periodic work of a worker failed; it runs again after its period", e);
            } finally {
                arm();
            }
        }

        /** No further run. */
        void cancel() {
            cancelled = true;
            ScheduledFuture<?> f = next;
            if (f != null) {
                f.cancel(false);
            }
        }
    }
}
