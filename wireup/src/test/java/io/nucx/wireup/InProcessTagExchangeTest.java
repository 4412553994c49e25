package io.nucx.wireup;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.util.concurrent.Future;
import io.nucx.Endpoint;
import io.nucx.protocol.select.ProtoTable;
import io.nucx.protocol.select.SelectionKey;
import io.nucx.protocol.tag.EagerProtocols;
import io.nucx.protocol.tag.TagMessage;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.nucx.wireup.TestWorkers.assertPattern;
import static io.nucx.wireup.TestWorkers.assertReceived;
import static io.nucx.wireup.TestWorkers.pattern;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Two workers in one JVM exchange tagged messages over one transport, content checked byte for byte. */
@Timeout(120)
class InProcessTagExchangeTest {

    @RegisterExtension
    final TestWorkers workers = new TestWorkers();





    /**
     * {@link Endpoint#trySendShort} sends one buffer again and again without taking it: on the loop, each call copies
     * the bytes into the ring (shm) or into one short frame in the lane's outbound buffer (tcp) (true) and leaves the
     * buffer's indices and reference count alone, and the messages arrive in order among ordinary sends, heap or
     * direct. It says false, and sends nothing, for a message over the short protocol's size, off the loop, with a
     * user's handler in the pipeline and after the endpoint closed.
     */
    @ParameterizedTest
    @ValueSource(strings = {"shm", "tcp"})
    void trySendShortSendsTheCallersBufferWithoutTakingIt(String tls) throws Exception {
        DefaultWorker a = workers.start("a", "TLS", tls);
        DefaultWorker b = workers.start("b", "TLS", tls);
        Endpoint ep = a.connect(b.address());
        ep.wireupFuture().get(10, TimeUnit.SECONDS);
        ByteBuf heap = pattern(7, 8);
        ByteBuf direct = TestWorkers.directPattern(7, 8);
        ByteBuf large = pattern(8, 100_000);
        try {
            int n = 200;
            List<Future<TagMessage>> got = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                got.add(b.tagRecv(i, -1L));
            }
            List<Boolean> taken = ep.eventLoop().submit(() -> {
                List<Boolean> t = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    ByteBuf buf = i % 2 == 0 ? heap : direct;
                    if (i % 50 == 25) { // an ordinary send among them keeps its place
                        ep.tagSend(i, pattern(7, 8));
                        t.add(true);
                        continue;
                    }
                    boolean now = ep.trySendShort(i, buf);
                    t.add(now);
                    if (!now) {
                        ep.tagSend(i, buf.retainedDuplicate()); // the caller's fallback
                    }
                }
                t.add(ep.trySendShort(n, large));
                ep.flush();
                return t;
            }).get(10, TimeUnit.SECONDS);
            for (int i = 0; i < n; i++) {
                if (i % 50 != 25) {
                    assertEquals(true, taken.get(i), "message " + i + " over " + tls);
                }
            }
            assertEquals(false, taken.get(n), "a 100,000-byte message is not short");
            for (int i = 0; i < n; i++) {
                TagMessage m = got.get(i).get(30, TimeUnit.SECONDS);
                try {
                    assertEquals(i, m.tag());
                    assertPattern(7, 8, m.content());
                } finally {
                    m.release();
                }
            }
            for (ByteBuf buf : List.of(heap, direct)) {
                assertEquals(1, buf.refCnt(), "the caller's buffer keeps its one reference");
                assertEquals(0, buf.readerIndex());
                assertEquals(8, buf.writerIndex());
            }
            assertEquals(false, ep.trySendShort(n + 1, heap), "off the endpoint's loop");
            ep.pipeline().addLast(new ChannelOutboundHandlerAdapter());
            assertEquals(false, ep.eventLoop().submit(() -> ep.trySendShort(n + 2, heap)).get(10, TimeUnit.SECONDS),
                    "a user's handler in the pipeline must see every write");
            ep.close().sync();
            assertEquals(false, ep.eventLoop().submit(() -> ep.trySendShort(n + 3, heap)).get(10, TimeUnit.SECONDS),
                    "after close");
            Future<TagMessage> none = b.tagRecv(n, -1L);
            Thread.sleep(200);
            assertTrue(!none.isDone(), "nothing was sent for a false");
            none.cancel(false);
        } finally {
            heap.release();
            direct.release();
            large.release();
        }
    }

    /**
     * {@link Endpoint#trySendShort} takes exactly the sizes the endpoint's table gives eager short, for heap and direct
     * buffers alike (each has a table of its own): its last size goes, one byte more does not, though the ring
     * would take it (NUCX_BCOPY_THRESH ends eager short at 1000 bytes).
     */
    @org.junit.jupiter.api.Test
    void trySendShortTakesExactlyTheSizesTheTableGivesEagerShort() throws Exception {
        DefaultWorker a = workers.start("a", "TLS", "shm", "BCOPY_THRESH", "1000");
        DefaultWorker b = workers.start("b", "TLS", "shm", "BCOPY_THRESH", "1000");
        Endpoint ep = a.connect(b.address());
        ep.wireupFuture().get(10, TimeUnit.SECONDS);
        for (SelectionKey.MemoryType memory : List.of(
                SelectionKey.MemoryType.HEAP,
                SelectionKey.MemoryType.DIRECT)) {
            int last = (int) a.protocolTable(b.address(), memory).entries().stream()
                    .filter(e -> e.candidate().protocol() == EagerProtocols.SHORT)
                    .mapToLong(ProtoTable.Entry::end).max().orElseThrow();
            assertTrue(last < 1000, "eager short ends below NUCX_BCOPY_THRESH: " + last);
            boolean direct = memory == SelectionKey.MemoryType.DIRECT;
            ByteBuf atLast = direct ? TestWorkers.directPattern(3, last) : pattern(3, last);
            ByteBuf past = direct ? TestWorkers.directPattern(4, last + 1) : pattern(4, last + 1);
            try {
                Future<TagMessage> got = b.tagRecv(1, -1L);
                List<Boolean> taken = ep.eventLoop().submit(() -> {
                    List<Boolean> t = List.of(ep.trySendShort(1, atLast), ep.trySendShort(2, past));
                    ep.flush();
                    return t;
                }).get(10, TimeUnit.SECONDS);
                assertEquals(List.of(true, false), taken, memory + ": " + last + " bytes go short, " + (last + 1)
                        + " do not");
                TagMessage m = got.get(10, TimeUnit.SECONDS);
                try {
                    assertPattern(3, last, m.content());
                } finally {
                    m.release();
                }
            } finally {
                atLast.release();
                past.release();
            }
        }
    }

    /** shm takes a short message as its parts (UCT's am_short), so such a send needs no promise at all. */
    @org.junit.jupiter.api.Test
    void aShortSendDoneAtOnceOnTheLoopNeedsNoPromiseAndKeepsItsPlaceInOrder() throws Exception {
        DefaultWorker a = workers.start("a", "TLS", "shm");
        DefaultWorker b = workers.start("b", "TLS", "shm");
        Endpoint ep = a.connect(b.address());
        ep.wireupFuture().get(10, TimeUnit.SECONDS);
        int[] sizes = {8, 8, 100_000, 8, 0};
        List<Future<TagMessage>> got = new ArrayList<>();
        for (int i = 0; i < sizes.length; i++) {
            got.add(b.tagRecv(i, -1L));
        }
        // on the endpoint's loop, as a handler sends: the short ones are in the transport when the call returns
        List<ChannelFuture> sends = ep.eventLoop().submit(() -> {
            List<ChannelFuture> fs = new ArrayList<>();
            for (int i = 0; i < sizes.length; i++) {
                fs.add(i % 2 == 0 ? ep.tagSend(i, pattern(i, sizes[i]))
                        : ep.writeAndFlush(new TagMessage(i, pattern(i, sizes[i]))));
            }
            return fs;
        }).get(10, TimeUnit.SECONDS);
        ChannelFuture sentNow = sends.get(0);
        assertTrue(sentNow.isDone() && sentNow.isSuccess(), "a short send on the loop is done on return");
        assertTrue(sends.get(1) == sentNow, "one shared succeeded future, no promise per send");
        assertTrue(sends.get(2) != sentNow, "a multi-fragment send has a promise of its own");
        // behind the large one (queued or in flight), the next short ones keep their order: checked on arrival
        for (int i = 0; i < sizes.length; i++) {
            assertArrived(i, sizes[i], got.get(i));
        }
        assertSent(sends);
        // off the loop the ordinary route: a promise that completes
        ChannelFuture offLoop = ep.tagSend(9, pattern(9, 8));
        assertTrue(offLoop != sentNow);
        TagMessage m = b.tagRecv(9, -1L).get(30, TimeUnit.SECONDS);
        m.release();
        assertTrue(offLoop.await(10, TimeUnit.SECONDS) && offLoop.isSuccess());
        assertTrue(a.counters().count(EagerProtocols.SHORT.name()) >= 4, "short sends counted");
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"tcp", "self"})
    void messagesOfEverySizeArriveIntactWrittenBeforeConnect(String tls) throws Exception {
        DefaultWorker a = workers.start("a", "TLS", tls);
        DefaultWorker b = workers.start("b", "TLS", tls);
        int[] sizes = {0, 1, 7, 100, 8183, 8184, 8192, 65528, 65529, 65536, 100_000, 131_064, 131_065, 200_000, 1 << 20,
                (4 << 20) + 3};
        Endpoint ep = a.connect(b.address());
        List<ChannelFuture> sends = new ArrayList<>();
        for (int i = 0; i < sizes.length; i++) {
            sends.add(ep.tagSend(i, pattern(i, sizes[i]))); // written before the lane is up
        }
        for (int i = 0; i < sizes.length; i++) {
            assertArrived(i, sizes[i], b.tagRecv(i, -1L));
        }
        assertSent(sends);
        assertTrue(a.counters().count(EagerProtocols.MULTI_BCOPY.name()) > 0);
        assertTrue(a.counters().count(EagerProtocols.SHORT.name()) > 0);
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"tcp", "self"})
    void receiverRepliesOnTheEndpointItCreated(String tls) throws Exception {
        DefaultWorker a = workers.start("a", "TLS", tls);
        DefaultWorker b = workers.start("b", "TLS", tls);
        Endpoint ab = a.connect(b.address());
        Future<TagMessage> pong = a.tagRecv(2, -1L);
        ab.tagSend(1, pattern(1, 1000));
        TagMessage ping = b.tagRecv(1, -1L).get(30, TimeUnit.SECONDS);
        ping.release();
        assertEquals(1, b.endpoints().size());
        Endpoint ba = b.endpoints().iterator().next();
        assertEquals(a.uuid(), ba.remoteWorkerAddress().uuid());
        ba.tagSend(2, pattern(2, 70_000)).sync();
        assertReceived(pong, 2, 70_000, 30);
    }

    /** Message {@code i} of {@code size} pattern bytes came to {@code receive}; released after the check. */
    private static void assertArrived(int i, int size, Future<TagMessage> receive) throws Exception {
        TagMessage m = receive.get(30, TimeUnit.SECONDS);
        try {
            assertEquals(i, m.tag());
            assertPattern(i, size, m.content());
        } finally {
            m.release();
        }
    }

    private static void assertSent(List<ChannelFuture> sends) throws InterruptedException {
        for (ChannelFuture f : sends) {
            assertTrue(f.await(10, TimeUnit.SECONDS) && f.isSuccess(), () -> "send failed: " + f.cause());
        }
    }
}
