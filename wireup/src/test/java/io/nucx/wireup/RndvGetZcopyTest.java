package io.nucx.wireup;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.ChannelFuture;
import io.netty.util.concurrent.Future;
import io.nucx.Endpoint;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.select.SelectionKey;
import io.nucx.protocol.tag.RndvCodec;
import io.nucx.protocol.tag.RndvHeaders;
import io.nucx.protocol.tag.RndvProtocols;
import io.nucx.protocol.tag.TagMessage;
import io.nucx.transport.AmFrame;
import io.nucx.transport.Capability;
import io.nucx.transport.cma.Cma;
import io.nucx.transport.cma.CmaKey;
import io.nucx.transport.rma.RmaLane;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.nucx.wireup.TestWorkers.assertReceived;
import static io.nucx.wireup.TestWorkers.pattern;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * rndv/get/zcopy between two workers of this JVM over tcp + cma (the kernel treats our own pid as any peer, and
 * always lets a process read itself): lanes, protocol choice by memory type, data, counters on both sides, and a
 * malformed RTS closing only its lane.
 */
@Timeout(120)
class RndvGetZcopyTest {

    @RegisterExtension
    final TestWorkers workers = new TestWorkers();

    @BeforeEach
    void cma() {
        assumeTrue(Cma.availability().isAvailable(), () -> Cma.availability().reason());
    }


    @Test
    void directSendsAboveTheThresholdAreReadByTheReceiverAndHeapSendsGoByAmFragments() throws Exception {
        DefaultWorker a = workers.start("a", "TLS", "tcp,cma");
        DefaultWorker b = workers.start("b", "TLS", "tcp,cma");
        Endpoint ep = a.connect(b.address());
        assertEquals("cma/memory", ep.rmaLane());
        assertNull(ep.rmaRefusal());
        long threshold = a.protocolTable(b.address(), SelectionKey.MemoryType.DIRECT)
                .entries().stream().filter(e -> e.candidate().protocol() == RndvProtocols.GET_ZCOPY).findFirst()
                .orElseThrow().start();
        int[] sizes = {(int) threshold, (int) threshold + 1, 3 << 20, (8 << 20) + 5};
        List<Future<TagMessage>> early = new ArrayList<>();
        for (int i = 0; i < sizes.length; i += 2) {
            early.add(b.tagRecv(i, -1L)); // expected RTS; the others arrive unexpected
        }
        List<ChannelFuture> sends = new ArrayList<>();
        for (int i = 0; i < sizes.length; i++) {
            sends.add(ep.tagSend(i, TestWorkers.directPattern(i, sizes[i])));
        }
        ChannelFuture heapSend = ep.tagSend(100, pattern(100, 16 << 20)); // heap: get/zcopy declined; above tcp's tag/rndv threshold
        for (int i = 0; i < sizes.length; i++) {
            assertReceived((i % 2 == 0 ? early.get(i / 2) : b.tagRecv(i, -1L)), i, sizes[i], 30);
        }
        assertReceived(b.tagRecv(100, -1L), 100, 16 << 20, 30);
        for (ChannelFuture f : sends) {
            assertTrue(f.await(10, TimeUnit.SECONDS) && f.isSuccess(), () -> "send failed: " + f.cause());
        }
        assertTrue(heapSend.await(10, TimeUnit.SECONDS) && heapSend.isSuccess());
        assertEquals(sizes.length, a.counters().count(RndvProtocols.GET_ZCOPY.name()), "sender offered");
        assertEquals(sizes.length, b.counters().count(RndvProtocols.RECV_GET_COUNTER), "receiver read");
        assertEquals(0, b.counters().count(RndvProtocols.RECV_GET_FALLBACK_COUNTER));
        assertEquals(0, a.counters().count(RndvProtocols.GET_FALLBACK_COUNTER), "every offer read");
        assertEquals(1, a.counters().count(RndvProtocols.TAG_RNDV.name()), "heap message by AM fragments");
        assertEquals(0, a.eventLoop().submit(() -> a.sumOverCodecs(RndvCodec.class, RndvCodec::sendsWaiting)).get(), "every send released on ATS");
    }

    /**
     * The receive's buffer 8 bytes past the send's modulo a page (a slice at an odd offset): the kernel's copy is slow
     * between such addresses, so cma's read goes through its bounce buffer; every byte lands where it belongs.
     */
    @Test
    void aReadIntoABufferPageAliasedWithTheSendersMovesEveryByte() throws Exception {
        DefaultWorker a = workers.start("a", "TLS", "tcp,cma");
        DefaultWorker b = workers.start("b", "TLS", "tcp,cma");
        Endpoint ep = a.connect(b.address());
        int size = (3 << 20) + 5; // above the read's threshold, across several of cma's chunks
        ByteBuf send = TestWorkers.directPattern(7, size);
        ByteBuf room = ByteBufAllocator.DEFAULT.directBuffer(size + 8192);
        try {
            long from = send.memoryAddress() + send.readerIndex();
            int at = (int) ((from + 8 - room.memoryAddress()) & 4095);
            ByteBuf into = room.slice(at, size).clear();
            Future<TagMessage> r = b.eventLoop().submit(() -> b.tagRecv(7, -1L, into)).get(10, TimeUnit.SECONDS);
            ChannelFuture sent = ep.tagSend(7, send); // the send's now
            send = null;
            assertTrue(sent.await(30, TimeUnit.SECONDS));
            TagMessage m = r.get(30, TimeUnit.SECONDS);
            try {
                assertEquals(8, (m.content().memoryAddress() + m.content().readerIndex() - from) & 4095,
                        "the message is in the receive's buffer");
                TestWorkers.assertPattern(7, size, m.content());
            } finally {
                m.release();
            }
            assertEquals(1, b.counters().count(RndvProtocols.RECV_GET_COUNTER), "read by cma");
        } finally {
            room.release();
            if (send != null) {
                send.release();
            }
        }
    }

    @Test
    void aCmaLaneThatClosedIsNoLongerARailAndTheNextMessageStillArrives() throws Exception {
        DefaultWorker a = workers.start("a", "TLS", "tcp,cma");
        DefaultWorker b = workers.start("b", "TLS", "tcp,cma");
        TestWorkers.Pair pair = TestWorkers.connected(a, b);
        Future<TagMessage> r1 = b.tagRecv(1, -1L);
        pair.ab().tagSend(1, TestWorkers.directPattern(1, 1 << 20)).sync();
        assertReceived(r1, 1, 1 << 20, 10);
        EndpointChannel ba = TestWorkers.impl(pair.ba());
        RmaLane lane = ba.eventLoop().submit(() -> ba.rmaRails(Capability.GET_ZCOPY).get(0).lane()).get();
        assertTrue(lane.channel().close().await(10, TimeUnit.SECONDS));
        // The endpoint keeps its rails from one message to the next: a rail whose lane closed must not be kept.
        assertEquals(List.of(), ba.eventLoop().submit(() -> ba.rmaRails(Capability.GET_ZCOPY)).get());
        Future<TagMessage> r2 = b.tagRecv(2, -1L);
        pair.ab().tagSend(2, TestWorkers.directPattern(2, 1 << 20)).sync();
        assertReceived(r2, 2, 1 << 20, 10);
        assertEquals(1, b.counters().count(RndvProtocols.RECV_GET_COUNTER), "the first read by the receiver");
        assertEquals(1, b.counters().count(RndvProtocols.RECV_GET_FALLBACK_COUNTER), "the second sent by the sender");
    }

    @Test
    void anRtsWithABadRemoteKeyLengthClosesThatLaneWithAClearErrorAndTheWorkerGoesOn() throws Exception {
        DefaultWorker a = workers.start("a", "TLS", "tcp,cma");
        DefaultWorker b = workers.start("b", "TLS", "tcp,cma");
        Endpoint ep = a.connect(b.address());
        ep.tagSend(1, pattern(1, 10)).sync(); // wired up
        TagMessage first = b.tagRecv(1, -1L).get(10, TimeUnit.SECONDS);
        first.release();
        ByteBuf h = RndvHeaders.writeRts(ep.alloc().buffer(), 2, 1, 4096,
                new CmaKey(1, 1, 0x1000, 4096).pack());
        h.setShortLE(RndvHeaders.RTS_LENGTH, 13); // the key length field lies
        TestWorkers.impl(ep).amLane().writeAndFlush(AmFrame.of(AmIds.RNDV_RTS, h)).sync();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (b.laneFailures().isEmpty() && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertTrue(b.laneFailures().stream().anyMatch(t -> String.valueOf(t.getMessage())
                .contains("RNDV_RTS remote key length is 13, but the header has 28 bytes after it")),
                () -> "failures: " + b.laneFailures());
        assertTrue(ep.closeFuture().await(10, TimeUnit.SECONDS), "the lane, and with it the endpoint, closed");
        // The worker still serves a new endpoint, by get/zcopy too.
        Endpoint again = a.connect(b.address());
        Future<TagMessage> r = b.tagRecv(3, -1L);
        again.tagSend(3, TestWorkers.directPattern(3, 1 << 20)).sync();
        assertReceived(r, 3, 1 << 20, 10);
        assertEquals(1, b.counters().count(RndvProtocols.RECV_GET_COUNTER));
    }

    /**
     * A graceful close of the receiving worker while it reads a rendezvous message out of the sender's buffer waits
     * for the read: the sender hears of the close only once the read is over, so it never lets go of a buffer still
     * being read. (The close went out mid-read: the sender's send failed, its application was free to write over the
     * buffer, and the read then completed the receive, successfully, with whatever the buffer held by then. Found by
     * TagMatchingRandomTest.) Here the sender's application writes over its buffer, from the end, as soon as its send
     * fails, so a read still going would bring back those bytes.
     */
    @Test
    void aReceiverClosingWhileItReadsWaitsForTheReadBeforeTheSenderLetsGoOfItsBuffer() throws Exception {
        DefaultWorker a = workers.start("a", "TLS", "tcp,cma");
        DefaultWorker b = workers.start("b", "TLS", "tcp,cma");
        Endpoint ep = a.connect(b.address());
        int size = 64 << 20;
        ByteBuf data = TestWorkers.directPattern(9, size);
        ByteBuf sendersMemory = data.retainedDuplicate(); // the application's hold on its buffer
        try {
            ChannelFuture sent = ep.tagSend(9, data);
            sent.addListener(f -> {
                if (!f.isSuccess()) {
                    for (int at = size - (1 << 20); at >= 0; at -= 1 << 20) {
                        sendersMemory.setZero(at, 1 << 20); // the buffer used again for something else
                    }
                }
            });
            TestWorkers.awaitUnexpected(b);
            Future<Future<TagMessage>> posted = b.eventLoop().submit(() -> {
                Future<TagMessage> r = b.tagRecv(9, -1L); // matched at once: the read begins
                b.close();
                return r;
            });
            Future<TagMessage> received = posted.get(30, TimeUnit.SECONDS);
            assertReceived(received, 9, size, 60);
            assertTrue(sent.await(30, TimeUnit.SECONDS) && sent.isSuccess(), () -> "the send: " + sent.cause());
            assertEquals(1, b.counters().count(RndvProtocols.RECV_GET_COUNTER), "the receiver read the message");
        } finally {
            sendersMemory.release();
        }
    }
}
