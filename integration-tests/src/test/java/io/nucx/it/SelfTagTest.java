package io.nucx.it;

import io.netty.channel.ChannelFuture;
import io.nucx.Endpoint;
import io.nucx.NucxBootstrap;
import io.nucx.Worker;
import io.nucx.protocol.tag.TagMessage;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayDeque;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The same 10,000 messages between two workers of this JVM over self (bounded in-process channels). */
@Timeout(300)
class SelfTagTest {

    @Test
    void tenThousandMessagesArriveIntactAndInOrderOverSelf() throws Exception {
        Worker receiver = new NucxBootstrap().name("receiver").config("TLS", "self").start();
        Worker sender = new NucxBootstrap().name("sender").config("TLS", "self").start();
        try {
            Endpoint ep = sender.connect(receiver.address());
            assertEquals("self/memory", ep.laneNames().get().get(0));
            ArrayDeque<ChannelFuture> inFlight = new ArrayDeque<>();
            int received = 0;
            for (int i = 0; i < TwoProcessTagTest.COUNT; i++) {
                inFlight.add(ep.tagSend(i, MessagePlan.content(i)));
                if (inFlight.size() > TwoProcessTagTest.WINDOW) {
                    // receive as we go: the self channel is bounded, so the sender waits for us
                    received = receive(receiver, received);
                    ChannelFuture f = inFlight.poll();
                    assertTrue(f.await(60, TimeUnit.SECONDS) && f.isSuccess(), () -> "send failed: " + f.cause());
                }
            }
            while (received < TwoProcessTagTest.COUNT) {
                received = receive(receiver, received);
            }
            for (ChannelFuture f : inFlight) {
                assertTrue(f.await(60, TimeUnit.SECONDS) && f.isSuccess(), () -> "send failed: " + f.cause());
            }
        } finally {
            sender.close().get(10, TimeUnit.SECONDS);
            receiver.close().get(10, TimeUnit.SECONDS);
        }
    }

    private static int receive(Worker w, int index) throws Exception {
        TagMessage m = w.tagRecv(0, 0).get(60, TimeUnit.SECONDS);
        try {
            assertEquals(index, m.tag(), "order");
            assertNull(MessagePlan.check(index, m.content()));
        } finally {
            m.release();
        }
        return index + 1;
    }
}
