package io.nucx;

import io.netty.channel.EventLoop;
import io.netty.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The channel pair's workers per loop: started once per loop, and none started once the group's shutdown began (a
 * channel connecting meanwhile would have started one that nothing closes).
 */
@Timeout(60)
class LoopWorkersTest {

    @Test
    void aLoopWhoseWorkersAreClosingStartsNoneAndItsWorkerCloses() throws Exception {
        NucxEventLoopGroup group = new NucxEventLoopGroup(1);
        try {
            EventLoop loop = group.next();
            Worker first = LoopWorkers.of(loop).sync().getNow();
            assertSame(first, LoopWorkers.of(loop).sync().getNow(), "one worker per loop");

            Future<Void> closed = LoopWorkers.close(group);
            Future<Worker> late = LoopWorkers.of(loop).await();

            assertFalse(late.isSuccess(), "a worker started on a loop whose group is shutting down");
            assertInstanceOf(RejectedExecutionException.class, late.cause());
            assertTrue(late.cause().getMessage().contains("is shutting down"), late.cause().getMessage());
            assertTrue(closed.await(30, TimeUnit.SECONDS), "the loop's worker did not close");
            assertTrue(first.close().isSuccess(), "the loop's worker closed with " + first.close().cause());
        } finally {
            group.shutdownGracefully(0, 5, TimeUnit.SECONDS).sync();
        }
    }
}
