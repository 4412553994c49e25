package io.nucx.wireup;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.util.concurrent.Future;
import io.nucx.protocol.tag.EagerTagSendHandler;
import io.nucx.protocol.tag.TagMessage;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Two workers in one JVM exchange tagged messages over one transport, content checked byte for byte. */
@Timeout(120)
class InProcessTagExchangeTest {

    private final List<Worker> workers = new ArrayList<>();

    private Worker start(String name, String tls) throws Exception {
        Worker w = new NucxBootstrap().name(name).config("TLS", tls).start();
        workers.add(w);
        return w;
    }

    @AfterEach
    void closeAll() throws Exception {
        for (Worker w : workers) {
            w.close().get(10, TimeUnit.SECONDS);
        }
    }

    static ByteBuf pattern(long seed, int length) { // shared with RendezvousTest
        byte[] b = new byte[length];
        new SplittableRandom(seed).nextBytes(b);
        return Unpooled.wrappedBuffer(b);
    }

    /** Compares as arrays: under PARANOID leak detection every ByteBuf access records a trace. */
    static void assertPattern(long seed, int length, ByteBuf actual) {
        assertEquals(length, actual.readableBytes(), "length");
        byte[] expected = new byte[length];
        new SplittableRandom(seed).nextBytes(expected);
        byte[] got = new byte[length];
        actual.getBytes(actual.readerIndex(), got);
        int at = java.util.Arrays.mismatch(expected, got);
        assertTrue(at < 0, () -> "content of " + length + "-byte message differs at byte " + at);
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"tcp", "self"})
    void messagesOfEverySizeArriveIntactWrittenBeforeConnect(String tls) throws Exception {
        Worker a = start("a", tls);
        Worker b = start("b", tls);
        int[] sizes = {0, 1, 7, 100, 8183, 8184, 8192, 65528, 65529, 65536, 100_000, 1 << 20, (4 << 20) + 3};
        Endpoint ep = a.connect(b.address());
        List<ChannelFuture> sends = new ArrayList<>();
        for (int i = 0; i < sizes.length; i++) {
            sends.add(ep.tagSend(i, pattern(i, sizes[i]))); // written before the lane is up
        }
        for (int i = 0; i < sizes.length; i++) {
            TagMessage m = b.tagRecv(i, -1L).get(30, TimeUnit.SECONDS);
            try {
                assertEquals(i, m.tag());
                assertPattern(i, sizes[i], m.content());
            } finally {
                m.release();
            }
        }
        for (ChannelFuture f : sends) {
            assertTrue(f.await(10, TimeUnit.SECONDS) && f.isSuccess(), () -> "send failed: " + f.cause());
        }
        assertTrue(a.counters().count(EagerTagSendHandler.EGR_MULTI_BCOPY) > 0);
        assertTrue(a.counters().count(EagerTagSendHandler.EGR_SHORT) > 0);
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"tcp", "self"})
    void receiverRepliesOnTheEndpointItCreated(String tls) throws Exception {
        Worker a = start("a", tls);
        Worker b = start("b", tls);
        Endpoint ab = a.connect(b.address());
        Future<TagMessage> pong = a.tagRecv(2, -1L);
        ab.tagSend(1, pattern(1, 1000));
        TagMessage ping = b.tagRecv(1, -1L).get(30, TimeUnit.SECONDS);
        ping.release();
        assertEquals(1, b.endpoints().size());
        Endpoint ba = b.endpoints().iterator().next();
        assertEquals(a.uuid(), ba.remoteWorkerAddress().uuid());
        ba.tagSend(2, pattern(2, 70_000)).sync();
        TagMessage m = pong.get(30, TimeUnit.SECONDS);
        try {
            assertPattern(2, 70_000, m.content());
        } finally {
            m.release();
        }
    }
}
