package io.nucx.wireup;

import io.netty.channel.DefaultEventLoop;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A worker's periodic work timed off its loop: on the loop, after each run's end, until cancelled or the loop ends. */
class LoopTimerTest {

    private static final long MS = 1_000_000L;
    private final InspectableLoop loop = new InspectableLoop();

    /** A loop that says whether a scheduled task waits in its queue (what makes each pass read the clock). */
    private static final class InspectableLoop extends DefaultEventLoop {
        boolean hasAScheduledTask() {
            return nextScheduledTaskNano() != -1;
        }
    }

    @AfterEach
    void shutDown() throws Exception {
        loop.shutdownGracefully(0, 1, TimeUnit.SECONDS).await(5, TimeUnit.SECONDS);
    }

    @Test
    void theWorkRunsOnTheLoopEveryPeriodAfterItsLastRunEnded() throws Exception {
        List<Long> ends = new CopyOnWriteArrayList<>();
        AtomicInteger onLoop = new AtomicInteger();
        LoopTimer.Periodic p = LoopTimer.everyAfter(loop, 20 * MS, () -> {
            if (loop.inEventLoop()) {
                onLoop.incrementAndGet();
            }
            sleep(30); // longer than the period: a fixed rate would run again at once
            ends.add(System.nanoTime());
        });
        long deadline = System.nanoTime() + 5_000 * MS;
        while (ends.size() < 4 && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        // between runs, nothing waits in the loop's scheduled queue: the timer's thread holds the period
        assertEquals(Boolean.FALSE, loop.submit(loop::hasAScheduledTask).get(5, TimeUnit.SECONDS));
        p.cancel();
        assertTrue(ends.size() >= 4, "runs: " + ends.size());
        assertEquals(ends.size(), onLoop.get(), "every run on the loop");
        for (int i = 1; i < 4; i++) {
            long gap = ends.get(i) - ends.get(i - 1);
            assertTrue(gap >= 50 * MS, "run " + i + " ended " + gap / MS + " ms after the one before (30 ms of work "
                    + "after a 20 ms period counted from the end)");
        }
    }

    @Test
    void noRunAfterCancelEvenOneAlreadyHandedToTheLoop() throws Exception {
        AtomicInteger runs = new AtomicInteger();
        LoopTimer.Periodic p = LoopTimer.everyAfter(loop, MS, runs::incrementAndGet);
        long deadline = System.nanoTime() + 5_000 * MS;
        while (runs.get() < 3 && System.nanoTime() < deadline) {
            Thread.sleep(1);
        }
        // cancelled from the loop while a run may be queued behind this task
        loop.submit(p::cancel).get(5, TimeUnit.SECONDS);
        int atCancel = loop.submit(runs::get).get(5, TimeUnit.SECONDS);
        Thread.sleep(50);
        assertEquals(atCancel, loop.submit(runs::get).get(5, TimeUnit.SECONDS), "runs after cancel");
        assertTrue(atCancel >= 3, "runs before cancel: " + atCancel);
    }

    @Test
    void aFailingRunIsLoggedAndTheNextComesAnyway() throws Exception {
        AtomicInteger runs = new AtomicInteger();
        LoopTimer.Periodic p = LoopTimer.everyAfter(loop, MS, () -> {
            if (runs.incrementAndGet() == 1) {
                throw new IllegalStateException("the first run fails");
            }
        });
        long deadline = System.nanoTime() + 5_000 * MS;
        while (runs.get() < 3 && System.nanoTime() < deadline) {
            Thread.sleep(1);
        }
        p.cancel();
        assertTrue(runs.get() >= 3, "runs: " + runs.get());
    }

    @Test
    void aLoopThatEndedEndsItsPeriodicWork() throws Exception {
        AtomicInteger runs = new AtomicInteger();
        LoopTimer.Periodic p = LoopTimer.everyAfter(loop, 5 * MS, runs::incrementAndGet);
        loop.shutdownGracefully(0, 1, TimeUnit.SECONDS).await(5, TimeUnit.SECONDS);
        int atEnd = runs.get();
        Thread.sleep(50); // hand-overs to the ended loop are refused, and that stops the timer's re-arming
        assertEquals(atEnd, runs.get());
        p.cancel();
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
