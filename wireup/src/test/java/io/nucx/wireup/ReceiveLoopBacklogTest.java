package io.nucx.wireup;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.util.concurrent.Promise;
import io.nucx.Endpoint;
import io.nucx.Worker;
import io.nucx.protocol.tag.TagMessage;
import io.nucx.protocol.tag.TagReceive;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A receive loop ({@link Worker#tagRecv(TagReceive)} of a reusable receive, posted again from its handler) started
 * behind a backlog: every message already waits, unexpected, when the receive is first posted.
 */
@Timeout(120)
class ReceiveLoopBacklogTest {

    private static final int BACKLOG = 20_000;
    private static final long TAG = 0x77;

    @RegisterExtension
    final TestWorkers workers = new TestWorkers();

    /** Counts, checks the order, reposts; records how deep its calls nested. Loop only. */
    private static final class Loop implements TagReceive.Handler {
        final Worker worker;
        final TagReceive receive = TagReceive.reusable(TAG, -1L, this);
        final Promise<Void> done;
        long next;
        int depth;
        int maxDepth;

        Loop(Worker worker) {
            this.worker = worker;
            this.done = worker.eventLoop().newPromise();
        }

        @Override
        public void received(long tag, ByteBuf data) {
            depth++;
            maxDepth = Math.max(maxDepth, depth);
            try {
                long seq = data.readLong();
                if (seq != next) {
                    done.tryFailure(new AssertionError("message " + seq + " came where " + next + " was due"));
                    return;
                }
                if (++next == BACKLOG) {
                    done.trySuccess(null);
                    return;
                }
                worker.tagRecv(receive);
            } finally {
                data.release();
                depth--;
            }
        }

        @Override
        public void failed(Throwable cause) {
            done.tryFailure(cause);
        }
    }

    /**
     * Each waiting message completes the receive inside the post that matches it, and the handler posts it again
     * there. The worker takes that repost when the handler returns: one handler call at a time, in arrival order.
     * Nested, one call deeper per message, 20,000 of them overflowed the loop's stack (perftest's server hung so).
     */
    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void aReceiveLoopTakesABacklogOneHandlerCallAtATimeInOrder(String tls) throws Exception {
        Worker a = workers.start("a", "TLS", tls);
        Worker b = workers.start("b", "TLS", tls);
        Endpoint ep = TestWorkers.wiredUp(a, b);
        ep.eventLoop().submit(() -> {
            for (long i = 0; i < BACKLOG; i++) {
                ep.write(new TagMessage(TAG, Unpooled.buffer(8).writeLong(i)), ep.voidPromise());
            }
            ep.flush();
        }).get(30, TimeUnit.SECONDS);
        TestWorkers.awaitOnLoop(b, () -> b.unexpectedCount() == BACKLOG,
                "every message waiting before the first post");
        Loop loop = new Loop(b);
        b.eventLoop().execute(() -> b.tagRecv(loop.receive));
        assertTrue(loop.done.await(60, TimeUnit.SECONDS), "the loop took every message");
        loop.done.sync();
        assertEquals(1, (int) b.eventLoop().submit(() -> loop.maxDepth).get(10, TimeUnit.SECONDS),
                "one handler call at a time");
        assertEquals(0, (int) b.eventLoop().submit(b::unexpectedCount).get(10, TimeUnit.SECONDS));
    }
}
