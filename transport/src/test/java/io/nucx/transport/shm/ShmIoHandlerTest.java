package io.nucx.transport.shm;

import io.netty.channel.IoEvent;
import io.netty.channel.IoEventLoop;
import io.netty.channel.IoRegistration;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.nucx.transport.PolledIoHandle;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What the loop engine does with the handles it polls when one of them fails. */
@Timeout(60)
class ShmIoHandlerTest {

    /**
     * A handle whose poll throws is closed; the loop, and the other handle on it, go on (an exception out of the
     * engine would end the loop and every channel on it).
     */
    @Test
    void aHandleWhosePollThrowsIsClosedAndTheLoopAndItsOtherHandlesGoOn() throws Exception {
        MultiThreadIoEventLoopGroup group = new MultiThreadIoEventLoopGroup(1,
                ShmIoHandler.newFactory(NioIoHandler.newFactory(), Long.MAX_VALUE));
        try {
            IoEventLoop loop = (IoEventLoop) group.next();
            CountingHandle failing = new CountingHandle(true);
            CountingHandle healthy = new CountingHandle(false);
            loop.register(failing).sync();
            loop.register(healthy).sync();
            assertTrue(failing.closed.await(10, TimeUnit.SECONDS), "the failing handle was not closed");
            int before = healthy.polls.get();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (healthy.polls.get() < before + 1000 && System.nanoTime() < deadline) {
                Thread.sleep(1);
            }
            assertTrue(healthy.polls.get() >= before + 1000, "the other handle is no longer polled");
            assertEquals(42, loop.submit(() -> 42).get(10, TimeUnit.SECONDS));
            assertFalse(loop.isShuttingDown());
            assertEquals(0, healthy.closes.get(), "the healthy handle stays open");
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).await(10, TimeUnit.SECONDS);
        }
    }

    /**
     * Netty's loop calls prepareToDestroy only after a turn's I/O: a shutdown with no quiet period begun by one of its
     * tasks ends the loop before the next. Its handles are closed all the same, once, as it is destroyed (an rdma lane
     * left open would hold its posted writes for ever); and once when the shutdown comes from outside.
     */
    @Test
    void aLoopShutDownWithNoQuietPeriodClosesItsHandlesOnce() throws Exception {
        for (boolean fromOwnTask : new boolean[] {true, false}) {
            for (long spin : new long[] {0, Long.MAX_VALUE}) {
                MultiThreadIoEventLoopGroup group = new MultiThreadIoEventLoopGroup(1,
                        ShmIoHandler.newFactory(NioIoHandler.newFactory(), spin));
                IoEventLoop loop = (IoEventLoop) group.next();
                CountingHandle handle = new CountingHandle(false);
                loop.register(handle).sync();
                if (fromOwnTask) {
                    loop.execute(() -> group.shutdownGracefully(0, 5, TimeUnit.SECONDS));
                } else {
                    group.shutdownGracefully(0, 5, TimeUnit.SECONDS);
                }
                assertTrue(group.awaitTermination(10, TimeUnit.SECONDS), "the loop did not end");
                assertEquals(1, handle.closes.get(), "closes of the handle, shut down "
                        + (fromOwnTask ? "from the loop's own task" : "from outside") + ", spin " + spin);
            }
        }
    }

    private static final class CountingHandle implements PolledIoHandle {
        private final boolean fails;
        final AtomicInteger polls = new AtomicInteger();
        final AtomicInteger closes = new AtomicInteger();
        final CountDownLatch closed = new CountDownLatch(1);

        CountingHandle(boolean fails) {
            this.fails = fails;
        }

        @Override
        public int poll() {
            polls.incrementAndGet();
            if (fails && closed.getCount() > 0) {
                throw new IllegalStateException("a bug in the handle");
            }
            return 0;
        }

        @Override
        public boolean prepareToPark() {
            return true;
        }

        @Override
        public void unpark() {
        }

        @Override
        public void handle(IoRegistration registration, IoEvent event) {
            // polled, never signalled
        }

        @Override
        public void close() {
            closes.incrementAndGet();
            closed.countDown();
        }

        @Override
        public String toString() {
            return fails ? "failing handle" : "healthy handle";
        }
    }
}
