package io.nucx.wireup;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.util.concurrent.Future;
import io.nucx.Endpoint;
import io.nucx.Worker;
import io.nucx.protocol.tag.EagerProtocols;
import io.nucx.protocol.tag.MessageTruncatedException;
import io.nucx.protocol.tag.RndvProtocols;
import io.nucx.protocol.tag.TagMessage;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static io.nucx.wireup.TestWorkers.assertReceived;
import static io.nucx.wireup.TestWorkers.awaitUnexpected;
import static io.nucx.wireup.TestWorkers.pattern;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** tagSendSync: completes only once the receiver matched the message, by whichever protocol the table chose. */
@Timeout(120)
class SyncSendTest {

    @RegisterExtension
    final TestWorkers workers = new TestWorkers();




    /**
     * b answers a on the same lanes and a reads the answer: whatever b sent a before (a wrong early acknowledgement of
     * the sync send) has been read by a by then. A causal barrier instead of a sleep.
     */
    private static void roundTrip(Worker a, Worker b) throws Exception {
        Future<TagMessage> back = a.tagRecv(999, -1L);
        b.endpoints().iterator().next().tagSend(999, pattern(999, 1)).sync();
        back.get(30, TimeUnit.SECONDS).release();
    }

    /** Sizes on both sides of the sync single / multi boundary and, on self, past the rendezvous threshold. */
    @ParameterizedTest(name = "{0} {1} B")
    @CsvSource({
            "tcp, 8, egrsnc/single/bcopy",
            "tcp, 131056, egrsnc/single/bcopy",
            "tcp, 131057, egrsnc/multi/bcopy",
            "tcp, 200000, egrsnc/multi/bcopy",
            "self, 8, egrsnc/single/bcopy",
            "self, 200000, tag/rndv"})
    void aSyncSendCompletesOnlyOnceTheReceiverMatchedIt(String tls, int size, String protocol) throws Exception {
        DefaultWorker a = workers.start("a", "TLS", tls);
        DefaultWorker b = workers.start("b", "TLS", tls);
        Endpoint ep = a.connect(b.address());
        ChannelFuture sync = ep.tagSendSync(5, pattern(5, size));
        awaitUnexpected(b);
        roundTrip(a, b);
        assertFalse(sync.isDone(), "not matched yet: the sync send must still be pending");
        assertReceived(b.tagRecv(5, -1L), 5, size, 30);
        assertTrue(sync.await(10, TimeUnit.SECONDS) && sync.isSuccess(), () -> "sync send: " + sync.cause());
        assertEquals(1, a.counters().count(protocol), () -> "expected " + protocol + ": " + a.counters().snapshot());
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"tcp", "self"})
    void aSyncSendMatchedByATooSmallReceiveFailsOnBothSides(String tls) throws Exception {
        DefaultWorker a = workers.start("a", "TLS", tls);
        DefaultWorker b = workers.start("b", "TLS", tls);
        ByteBuf small = Unpooled.buffer(10);
        try {
            Future<TagMessage> recv = b.tagRecv(6, -1L, small);
            ChannelFuture sync = a.connect(b.address()).tagSendSync(6, pattern(6, 100));
            ExecutionException re = assertThrows(ExecutionException.class, () -> recv.get(30, TimeUnit.SECONDS));
            assertInstanceOf(MessageTruncatedException.class, re.getCause());
            assertTrue(sync.await(30, TimeUnit.SECONDS));
            assertInstanceOf(MessageTruncatedException.class, sync.cause(), "the sender is told");
            assertEquals(1, a.counters().count(EagerProtocols.SYNC_SINGLE_BCOPY.name()));
        } finally {
            small.release();
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"tcp", "self"})
    void aSyncSendFailsWhenThePeerGoesAwayBeforeMatching(String tls) throws Exception {
        DefaultWorker a = workers.start("a", "TLS", tls);
        DefaultWorker b = workers.start("b", "TLS", tls);
        ChannelFuture sync = a.connect(b.address()).tagSendSync(7, pattern(7, 10));
        awaitUnexpected(b);
        b.close().get(10, TimeUnit.SECONDS);
        assertTrue(sync.await(10, TimeUnit.SECONDS));
        assertFalse(sync.isSuccess(), "a peer that never matched cannot have acknowledged");
        assertEquals(0, a.counters().count(RndvProtocols.TAG_RNDV.name()));
    }
}
