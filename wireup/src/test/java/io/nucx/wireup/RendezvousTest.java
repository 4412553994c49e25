package io.nucx.wireup;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.util.concurrent.Future;
import io.nucx.Endpoint;
import io.nucx.protocol.tag.EagerProtocols;
import io.nucx.protocol.tag.MessageTruncatedException;
import io.nucx.protocol.tag.RndvProtocols;
import io.nucx.protocol.tag.TagMessage;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static io.nucx.wireup.TestWorkers.assertPattern;
import static io.nucx.wireup.TestWorkers.assertReceived;
import static io.nucx.wireup.TestWorkers.awaitUnexpected;
import static io.nucx.wireup.TestWorkers.pattern;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Rendezvous (RTS, RTR, data; ATS on truncation) between two workers, over tcp and self. */
@Timeout(120)
class RendezvousTest {

    @RegisterExtension
    final TestWorkers workers = new TestWorkers();



    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"tcp", "self"})
    void messagesAboveTheThresholdGoByRendezvousPostedBeforeOrAfterTheyArrive(String tls) throws Exception {
        DefaultWorker a = workers.start("a", "TLS", tls, "RNDV_THRESH", "1k");
        DefaultWorker b = workers.start("b", "TLS", tls, "RNDV_THRESH", "1k");
        int[] sizes = {0, 100, 1023, 1024, 5000, 100_000, (4 << 20) + 3};
        int rndvSizes = 4; // 1024 and above
        Endpoint ep = a.connect(b.address());
        // Half the receives are posted first (expected RTS), half after the RTS arrived (unexpected RTS).
        List<Future<TagMessage>> early = new ArrayList<>();
        for (int i = 0; i < sizes.length; i += 2) {
            early.add(b.tagRecv(i, -1L));
        }
        List<ChannelFuture> sends = new ArrayList<>();
        for (int i = 0; i < sizes.length; i++) {
            sends.add(ep.tagSend(i, pattern(i, sizes[i])));
        }
        for (int i = 0; i < sizes.length; i++) {
            Future<TagMessage> f = i % 2 == 0 ? early.get(i / 2) : b.tagRecv(i, -1L);
            assertReceived(f, i, sizes[i], 30);
        }
        for (ChannelFuture f : sends) {
            assertTrue(f.await(10, TimeUnit.SECONDS) && f.isSuccess(), () -> "send failed: " + f.cause());
        }
        assertEquals(rndvSizes, a.counters().count(RndvProtocols.TAG_RNDV.name()));
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"tcp", "self"})
    void aReceiveTooSmallFailsWithTruncationAndTheSenderIsTold(String tls) throws Exception {
        DefaultWorker a = workers.start("a", "TLS", tls, "RNDV_THRESH", "1k");
        DefaultWorker b = workers.start("b", "TLS", tls, "RNDV_THRESH", "1k");
        ByteBuf small = Unpooled.buffer(100);
        try {
            Future<TagMessage> recv = b.tagRecv(7, -1L, small);
            ChannelFuture send = a.connect(b.address()).tagSend(7, pattern(7, 5000));
            ExecutionException re = assertThrows(ExecutionException.class, () -> recv.get(30, TimeUnit.SECONDS));
            assertInstanceOf(MessageTruncatedException.class, re.getCause());
            assertTrue(send.await(30, TimeUnit.SECONDS));
            assertInstanceOf(MessageTruncatedException.class, send.cause(), "the sender is told");
            assertEquals(0, small.readableBytes(), "nothing written into the too-small buffer");
            // the endpoint still works after a refused rendezvous
            Future<TagMessage> next = b.tagRecv(8, -1L);
            a.endpoints().iterator().next().tagSend(8, pattern(8, 3000)).sync();
            assertReceived(next, 8, 3000, 30);
        } finally {
            small.release();
        }
    }

    /**
     * The same refusal for a send written with the endpoint's void promise: the user's handlers hear it, and the
     * endpoint goes on (it reached the pipeline as an exception and was taken for a protocol error, which failed the
     * endpoint).
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"tcp", "self"})
    void aTruncatedSendWithTheVoidPromiseFailsOnlyItself(String tls) throws Exception {
        DefaultWorker a = workers.start("a", "TLS", tls, "RNDV_THRESH", "1k");
        DefaultWorker b = workers.start("b", "TLS", tls, "RNDV_THRESH", "1k");
        ByteBuf small = Unpooled.buffer(100);
        try {
            Future<TagMessage> recv = b.tagRecv(7, -1L, small);
            Endpoint ab = a.connect(b.address());
            CompletableFuture<Throwable> heard = new CompletableFuture<>();
            a.eventLoop().submit(() -> {
                ab.pipeline().addLast(new ChannelInboundHandlerAdapter() {
                    @Override
                    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
                        heard.complete(cause);
                    }
                });
                ab.writeAndFlush(new TagMessage(7, pattern(7, 5000)), ab.voidPromise());
            }).sync();
            ExecutionException re = assertThrows(ExecutionException.class, () -> recv.get(30, TimeUnit.SECONDS));
            assertInstanceOf(MessageTruncatedException.class, re.getCause());
            assertInstanceOf(MessageTruncatedException.class, heard.get(30, TimeUnit.SECONDS), "the user's handler");
            Future<TagMessage> next = b.tagRecv(8, -1L);
            ChannelFuture sent = ab.tagSend(8, pattern(8, 3000));
            assertReceived(next, 8, 3000, 30);
            assertTrue(sent.await(10, TimeUnit.SECONDS) && sent.isSuccess(), () -> "the endpoint went on: "
                    + sent.cause());
        } finally {
            small.release();
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"tcp", "self"})
    void aRendezvousIntoTheUsersBufferLandsThereWithoutAnotherCopy(String tls) throws Exception {
        DefaultWorker a = workers.start("a", "TLS", tls, "RNDV_THRESH", "1k");
        DefaultWorker b = workers.start("b", "TLS", tls, "RNDV_THRESH", "1k");
        ByteBuf into = Unpooled.directBuffer(300_000);
        try {
            Future<TagMessage> recv = b.tagRecv(9, -1L, into);
            a.connect(b.address()).tagSend(9, pattern(9, 200_000));
            TagMessage m = recv.get(30, TimeUnit.SECONDS);
            try {
                assertPattern(9, 200_000, m.content());
                assertEquals(200_000, into.readableBytes());
            } finally {
                m.release();
            }
        } finally {
            into.release();
        }
    }

    /**
     * A completed send leaves the buffer to its owner, as UCX's does: overwritten as soon as the send's future says
     * done, the receiver still gets what was sent. Over self a frame is handed to the receiver as it is, so the data
     * must not be slices of the sender's buffer once the send has completed.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"tcp", "self"})
    void aBufferOverwrittenOnceItsSendCompletedDoesNotChangeWhatArrives(String tls) throws Exception {
        // Room for the whole message in self's queue: the send completes while the receiver has most of it to copy.
        DefaultWorker a = workers.start("a", "TLS", tls, "RNDV_THRESH", "1k", "SELF_QUEUE_BYTES", "64m");
        DefaultWorker b = workers.start("b", "TLS", tls, "RNDV_THRESH", "1k", "SELF_QUEUE_BYTES", "64m");
        int length = 16 << 20;
        ByteBuf sent = TestWorkers.directPattern(11, length);
        try {
            Future<TagMessage> recv = b.tagRecv(11, -1L);
            ChannelFuture send = a.connect(b.address()).tagSend(11, sent.retain());
            // On the sender's loop, at once: the receiver's loop, still copying its 256 fragments in, is held after its
            // current batch until the buffer is overwritten, so what it copies after that shows which bytes it reads.
            CountDownLatch overwritten = new CountDownLatch(1);
            send.addListener(f -> {
                b.eventLoop().execute(() -> {
                    try {
                        overwritten.await(10, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                });
                sent.setZero(0, length);
                overwritten.countDown();
            });
            assertTrue(send.await(30, TimeUnit.SECONDS) && send.isSuccess(), () -> "send failed: " + send.cause());
            assertReceived(recv, 11, length, 30);
            assertEquals(1, a.counters().count(RndvProtocols.TAG_RNDV.name()));
        } finally {
            sent.release();
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"tcp", "self"})
    void aSendWaitingForItsReceiverFailsWhenThePeerGoesAway(String tls) throws Exception {
        DefaultWorker a = workers.start("a", "TLS", tls, "RNDV_THRESH", "1k");
        DefaultWorker b = workers.start("b", "TLS", tls, "RNDV_THRESH", "1k");
        Endpoint ep = a.connect(b.address());
        ChannelFuture send = ep.tagSend(1, pattern(1, 10_000)); // nobody receives: the RTS waits unexpected
        awaitUnexpected(b);
        assertFalse(send.isDone(), "a rendezvous send completes only when the data has gone");
        b.close().get(10, TimeUnit.SECONDS);
        assertTrue(send.await(10, TimeUnit.SECONDS));
        assertFalse(send.isSuccess());
    }


    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"tcp"})
    void theAutomaticThresholdSendsLargeMessagesByRendezvousAndSmallOnesEagerly(String tls) throws Exception {
        DefaultWorker a = workers.start("a", "TLS", tls, "RNDV_THRESH", "auto");
        DefaultWorker b = workers.start("b", "TLS", tls, "RNDV_THRESH", "auto");
        Endpoint ep = a.connect(b.address());
        int big = 64 << 20;
        Future<TagMessage> r1 = b.tagRecv(1, -1L);
        Future<TagMessage> r2 = b.tagRecv(2, -1L);
        // Under the crossover on every engine: about 350 KB on epoll's lanes (which place payloads), 1 MiB on io_uring's.
        int small = 256 << 10;
        ep.tagSend(1, pattern(1, small));
        ep.tagSend(2, pattern(2, big));
        for (Future<TagMessage> f : List.of(r1, r2)) {
            TagMessage m = f.get(60, TimeUnit.SECONDS);
            try {
                assertPattern(m.tag(), m.tag() == 1 ? small : big, m.content());
            } finally {
                m.release();
            }
        }
        assertEquals(1, a.counters().count(EagerProtocols.MULTI_BCOPY.name()), "256 KiB goes eager on tcp");
        assertEquals(1, a.counters().count(RndvProtocols.TAG_RNDV.name()), "64 MiB goes by rendezvous on tcp");
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"tcp", "self"})
    void protocolInfoShowsTheTablesWithoutConnecting(String tls) throws Exception {
        DefaultWorker a = workers.start("a", "TLS", tls, "RNDV_THRESH", "4k");
        DefaultWorker b = workers.start("b", "TLS", tls, "RNDV_THRESH", "auto");
        String forced = a.protocolInfo(b.address());
        assertTrue(forced.contains("4K..inf | (?) rendezvous"), forced);
        assertTrue(forced.contains("0..4095 | eager short"), forced);
        String auto = b.protocolInfo(a.address());
        assertTrue(auto.contains("multi-frag eager copy-in copy-out") && auto.contains("(?) rendezvous"), auto);
        assertEquals(0, a.endpoints().size() + b.endpoints().size(), "nothing was connected");
    }


    /**
     * Error mode failover asks no lane where a payload goes (a lane may bring a frame again after a failover), so a
     * receiver there must not offer placed fragments larger than its lanes take the ordinary way: on epoll and nio,
     * whose lanes otherwise place, rendezvous messages posted with and without a buffer arrive whole and the lane
     * stays up (an RTR offering the whole message once made the sender's frame close the lane as too long).
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"epoll", "nio"})
    void inFailoverModeLargeRendezvousFramesAreNotOffered(String engine) throws Exception {
        String[] settings = {"TLS", "tcp", "TCP_IO", engine, "ERR_MODE", "failover", "RNDV_THRESH", "64k"};
        DefaultWorker a = workers.start("a", settings);
        DefaultWorker b = workers.start("b", settings);
        Endpoint ep = a.connect(b.address());
        int[] sizes = {700 << 10, 3 << 20};
        for (int i = 0; i < sizes.length; i++) {
            Future<TagMessage> plain = b.tagRecv(10 + i, -1L);
            ByteBuf into = ByteBufAllocator.DEFAULT.directBuffer(sizes[i]);
            try {
                Future<TagMessage> inPlace = b.tagRecv(20 + i, -1L, into);
                ep.tagSend(10 + i, TestWorkers.directPattern(10 + i, sizes[i]));
                ep.tagSend(20 + i, TestWorkers.directPattern(20 + i, sizes[i]));
                assertReceived(plain, 10 + i, sizes[i], 30);
                assertReceived(inPlace, 20 + i, sizes[i], 30);
            } finally {
                into.release();
            }
        }
        assertTrue(ep.isActive(), () -> "the endpoint failed: " + ep.errorFuture().cause());
        assertEquals(4, a.counters().count(RndvProtocols.TAG_RNDV.name()), () -> a.counters().snapshot().toString());
    }
}
