package io.nucx.examples.perf;

import io.netty.buffer.Unpooled;
import io.netty.util.concurrent.Future;
import io.nucx.Endpoint;
import io.nucx.NucxBootstrap;
import io.nucx.Worker;
import io.nucx.protocol.tag.TagMessage;
import org.junit.jupiter.api.Test;

import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** perftest's server against a client that ran far ahead of it. */
class TagPerfServerTest {

    private static final int BACKLOG = 20_000;

    /**
     * Every message is already waiting, unexpected, when the server posts its first receive: each completes inside the
     * post that matches it. Taken one nested call per message, 20,000 of them overflowed the loop's stack (bin/build's
     * AOT training run hung so); the server counts them all and finishes.
     */
    @Test
    void aBacklogOfWaitingMessagesIsTakenInALoopNotOneNestedCallEach() throws Exception {
        Worker server = new NucxBootstrap().name("backlog-server").config("TLS", "tcp").start();
        Worker client = null;
        try {
            client = new NucxBootstrap().name("backlog-client").config("TLS", "tcp").start();
            Endpoint toServer = client.connect(server.address());
            toServer.wireupFuture().get(30, TimeUnit.SECONDS);
            toServer.eventLoop().submit(() -> {
                for (int i = 0; i < BACKLOG; i++) {
                    toServer.write(new TagMessage(PerfTags.DATA, Unpooled.wrappedBuffer(new byte[8])),
                            toServer.voidPromise());
                }
                toServer.writeAndFlush(new TagMessage(PerfTags.FINISH, Unpooled.EMPTY_BUFFER), toServer.voidPromise());
            }).get(30, TimeUnit.SECONDS);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            int waiting = 0;
            while (waiting < BACKLOG + 1 && System.nanoTime() < deadline) {
                waiting = server.eventLoop().submit(server::unexpectedCount).get(10, TimeUnit.SECONDS);
                Thread.sleep(10);
            }
            assertEquals(BACKLOG + 1, waiting, "every message waiting before the server posts a receive");
            Endpoint toClient = server.endpoints().iterator().next();
            Future<Long> done = server.eventLoop().submit(() -> new TagPerfServer(server, toClient, 64, false).start())
                    .get(10, TimeUnit.SECONDS);
            assertTrue(done.await(60, TimeUnit.SECONDS), "the server finished");
            assertEquals(BACKLOG, done.getNow(), "every DATA message counted, then FINISH");
            assertEquals(0, (int) server.eventLoop().submit(server::unexpectedCount).get(10, TimeUnit.SECONDS));
        } finally {
            if (client != null) {
                client.close().get(10, TimeUnit.SECONDS);
            }
            server.close().get(10, TimeUnit.SECONDS);
        }
    }
}
