package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.util.concurrent.Promise;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.ProtocolException;
import io.nucx.protocol.EndpointConfig;
import io.nucx.protocol.ProtocolRegistry;
import io.nucx.protocol.TestEndpoint;
import io.nucx.protocol.WorkerProtocols;
import io.nucx.transport.AmFrame;
import io.nucx.transport.HostId;
import io.nucx.transport.cma.Cma;
import io.nucx.transport.cma.CmaKey;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.nio.channels.ClosedChannelException;
import java.util.ArrayList;
import java.util.List;

import static io.nucx.protocol.tag.RndvEndpoint.bytes;
import static io.nucx.protocol.tag.RndvEndpoint.data;
import static io.nucx.protocol.tag.RndvEndpoint.direct;
import static io.nucx.protocol.tag.RndvEndpoint.pattern;
import static io.nucx.protocol.tag.RndvEndpoint.rts;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The receive side of {@code rndv/get/zcopy} in {@link RndvCodec} on an embedded endpoint whose RMA lane is a real
 * cma channel to this very process (the kernel treats it as any peer; the "sender's" buffers are this process's
 * memory): an RTS carrying a key is read into direct, heap and allocated buffers across chunk boundaries, then ATS;
 * truncation; a failed read falling back to RTR; no permitted lane; the endpoint ending mid-read. The codec's replies
 * come out of the channel ({@link #replies()}).
 */
@Timeout(60)
class RndvCodecGetTest {

    private RndvEndpoint ep;

    @BeforeEach
    void setUp() {
        ep = new RndvEndpoint(RndvScheme.AUTO, RndvEndpoint.defaultLane(), true);
    }

    @AfterEach
    void tearDown() {
        List<String> left = replies();
        ep.close();
        assertEquals(List.of(), left, "every reply was looked at");
    }

    /** A "sender's" buffer in this process's native memory, released after the test. */
    private ByteBuf source(byte[] data) {
        return ep.hold(direct(data));
    }

    /** The replies the codec wrote, as "RTR sender receiver size", "ATS sender status"; released. */
    private List<String> replies() {
        List<String> out = new ArrayList<>();
        for (AmFrame f; (f = ep.ch.readOutbound()) != null; ) {
            try {
                ByteBuf h = f.header();
                out.add(switch (f.amId()) {
                    case AmIds.RNDV_RTR -> "RTR " + h.getLongLE(0) + " " + h.getLongLE(8) + " " + h.getLongLE(16)
                            + (h.readableBytes() > RndvHeaders.RTR_LENGTH ? " +key" : "");
                    case AmIds.RNDV_ATS -> "ATS " + h.getLongLE(0) + " " + h.getByte(8);
                    default -> AmIds.name(f.amId());
                });
            } finally {
                f.release();
            }
        }
        return out;
    }

    private byte[] received(Promise<TagMessage> p) {
        ep.turnsUntil(p::isDone); // the later chunks run on later loop turns
        return ep.receives.bytes(p);
    }

    @Test
    void anRtsWithAKeyTheLaneRefusesOrNotCoveringTheMessageIsAProtocolError() {
        assumeTrue(ep.lane != null, () -> Cma.availability().reason());
        ByteBuf src = source(pattern(8, 5000));
        CmaKey good = CmaKey.of(src.nioBuffer());
        assertRefused(new CmaKey(good.hostId(), good.pid(), good.address(), 4999),
                "remote key covers 4999 bytes of a 5000-byte message");
        assertRefused(new CmaKey(good.hostId(), good.pid() + 1, good.address(), 5000),
                "names memory of pid " + (good.pid() + 1) + "; this lane's peer is pid " + good.pid());
        assertRefused(new CmaKey(good.hostId() + 1, good.pid(), good.address(), 5000), "names host id");
        AmFrame junk = rts(1, 2, 5000, new byte[13]);
        ProtocolException e = assertThrows(ProtocolException.class, () -> ep.arrive(junk));
        assertTrue(e.getMessage().contains("cma remote key is 13 bytes, expected 28"), e.getMessage());
        assertEquals(0, junk.refCnt());
        assertEquals(0, ep.worker.matcher().unexpectedCount(), "nothing kept of a refused RTS");
        assertEquals(List.of(), replies());
    }

    private void assertRefused(CmaKey key, String expected) {
        ProtocolException e = assertThrows(ProtocolException.class, () -> ep.arrive(rts(1, 2, 5000,
                key.pack())));
        assertTrue(e.getMessage().contains(expected), e.getMessage());
        assertTrue(e.getMessage().contains("RNDV_RTS 2"), e.getMessage());
    }

    @Test
    void anRtsAnnouncingMoreThanTheMaximumOrAWrongLengthIsAProtocolError() {
        ProtocolException e = assertThrows(ProtocolException.class, () -> ep.arrive(rts(1, 2, (1L << 30) + 1,
                null)));
        assertTrue(e.getMessage().contains("rendezvous request 2 announces 1073741825 bytes; NUCX_MAX_MSG_SIZE "
                + "allows 1073741824"), e.getMessage());
        e = assertThrows(ProtocolException.class, () -> ep.arrive(rts(1, 2, -1, null)));
        assertTrue(e.getMessage().contains("announces -1 bytes"), e.getMessage());
        AmFrame shortRts = AmFrame.of(AmIds.RNDV_RTS, Unpooled.buffer(16).writeLongLE(1).writeLongLE(2));
        e = assertThrows(ProtocolException.class, () -> ep.arrive(shortRts));
        assertTrue(e.getMessage().contains("RNDV_RTS header is 16 bytes, expected 24"), e.getMessage());
        assertEquals(0, shortRts.refCnt());
        AmFrame shortData = AmFrame.of(AmIds.RNDV_DATA, 0, Unpooled.buffer(8).writeLongLE(1), Unpooled.buffer(1)
                .writeByte(1));
        e = assertThrows(ProtocolException.class, () -> ep.arrive(shortData));
        assertTrue(e.getMessage().contains("RNDV_DATA header is 8 bytes, expected 16"), e.getMessage());
        assertEquals(0, shortData.refCnt());
        AmFrame unknownData = AmFrame.of(AmIds.RNDV_DATA, 0, Unpooled.buffer(16).writeLongLE(99).writeLongLE(0),
                Unpooled.buffer(1).writeByte(1));
        e = assertThrows(ProtocolException.class, () -> ep.arrive(unknownData));
        assertTrue(e.getMessage().contains("rendezvous data for unknown receive 99"), e.getMessage());
        assertEquals(0, unknownData.refCnt());
        assertEquals(0, ep.worker.matcher().unexpectedCount());
    }

    @Test
    void aMatchedRtsIsReadStraightIntoADirectReceiveBufferAcrossChunksThenAts() {
        assumeTrue(ep.lane != null, () -> Cma.availability().reason());
        int n = (int) (2 * Cma.TURN_BYTES + 12345);
        byte[] data = pattern(1, n);
        ByteBuf src = source(data);
        ByteBuf into = ByteBufAllocator.DEFAULT.directBuffer(n);
        ep.hold(into);
        Promise<TagMessage> p = ep.receives.post(5, -1L, into);
        ep.arrive(rts(5, 77, n, CmaKey.of(src.nioBuffer()).pack()));
        assertFalse(p.cancel(false), "matched: the data are being read into its buffer");
        assertEquals("rndv: 0 sends waiting, 1 receives, 0 held", ep.describe());
        assertEquals(2, ep.turnsUntil(p::isDone), "a turn's bytes at once, then a turn's per loop turn");
        assertArrayEquals(data, received(p));
        assertEquals(n, into.writerIndex(), "the user's buffer holds the message");
        assertEquals(List.of("ATS 77 0"), replies());
        assertEquals(1, ep.worker.counters().count(RndvProtocols.RECV_GET_COUNTER));
        assertEquals("rndv: 0 sends waiting, 0 receives, 0 held", ep.describe());
    }

    @Test
    void anUnexpectedRtsIsReadWhenAReceiveIsPostedIntoAHeapBufferThroughABounceBuffer() {
        assumeTrue(ep.lane != null, () -> Cma.availability().reason());
        int n = (int) Cma.CHUNK + 1;
        byte[] data = pattern(2, n);
        ByteBuf src = source(data);
        ep.arrive(rts(6, 78, n, CmaKey.of(src.nioBuffer()).pack()));
        assertEquals(1, ep.worker.matcher().unexpectedCount());
        assertEquals(List.of(), replies(), "nothing read before a receive matches");
        ByteBuf heap = Unpooled.buffer(n);
        ep.hold(heap);
        Promise<TagMessage> p = ep.receives.post(6, -1L, heap);
        assertArrayEquals(data, received(p));
        assertArrayEquals(data, bytes(heap));
        assertEquals(List.of("ATS 78 0"), replies());
    }

    @Test
    void aReceiveWithoutABufferGetsAnAllocatedOne() {
        assumeTrue(ep.lane != null, () -> Cma.availability().reason());
        byte[] data = pattern(3, 100_000);
        Promise<TagMessage> p = ep.receives.post(7, -1L);
        ep.arrive(rts(7, 79, data.length, CmaKey.of(source(data).nioBuffer()).pack()));
        assertArrayEquals(data, received(p));
        assertEquals(List.of("ATS 79 0"), replies());
    }

    @Test
    void aTooSmallReceiveIsTruncatedAndTheSenderToldWithoutReading() {
        byte[] data = pattern(4, 5000);
        ByteBuf small = Unpooled.directBuffer(100, 100);
        ep.hold(small);
        Promise<TagMessage> p = ep.receives.post(8, -1L, small);
        ep.arrive(rts(8, 80, data.length, CmaKey.of(source(data).nioBuffer()).pack()));
        MessageTruncatedException e = assertInstanceOf(MessageTruncatedException.class, p.cause());
        assertEquals(5000, e.length());
        assertEquals(100, e.capacity());
        assertEquals(List.of("ATS 80 -9"), replies());
        assertEquals(0, small.writerIndex());
        assertEquals(0, ep.worker.counters().count(RndvProtocols.RECV_GET_COUNTER));
    }

    @Test
    void aFailedReadFallsBackToRtrAndTheDataFragmentsCompleteTheReceive() {
        assumeTrue(ep.lane != null, () -> Cma.availability().reason());
        byte[] data = pattern(5, 3000);
        // A key to memory that is not mapped: the kernel answers EFAULT, as it would EPERM/ESRCH at run time.
        byte[] bad = new CmaKey(HostId.get(), Cma.pid(), 4096, data.length).pack();
        Promise<TagMessage> p = ep.receives.post(9, -1L);
        ep.arrive(rts(9, 81, data.length, bad));
        assertEquals(1, ep.endpoint.rmaFailures().size(), ep.endpoint.rmaFailures().toString());
        String failure = ep.endpoint.rmaFailures().get(0);
        assertTrue(failure.startsWith("rndv/get/zcopy fell back to RTR: process_vm_readv")
                && failure.contains("EFAULT"),
                failure);
        List<String> r = replies();
        assertEquals(1, r.size(), r.toString());
        String[] rtr = r.get(0).split(" ");
        assertEquals("RTR", rtr[0]);
        assertEquals("81", rtr[1]);
        assertEquals(Integer.toString(data.length), rtr[3]);
        assertEquals(4, rtr.length, "a plain RTR");
        assertFalse(p.isDone(), "the message is not failed");
        long receiverReq = Long.parseLong(rtr[2]);
        ep.arrive(data(receiverReq, 0, Unpooled.wrappedBuffer(data, 0, 2000)));
        ep.arrive(data(receiverReq, 2000, Unpooled.wrappedBuffer(data, 2000, 1000)));
        assertArrayEquals(data, received(p));
        assertEquals(List.of(), replies(), "no ATS after fragments: the sender completed with its last one");
        assertEquals(1, ep.worker.counters().count(RndvProtocols.RECV_GET_FALLBACK_COUNTER));
        assertEquals(0, ep.worker.counters().count(RndvProtocols.RECV_GET_COUNTER));
    }

    @Test
    void anEndpointThatMayNotReadAsksByRtr() {
        ep.endpoint.rma(null); // what the endpoint answers when its cma lane is not permitted
        byte[] data = pattern(6, 3000);
        Promise<TagMessage> p = ep.receives.post(10, -1L);
        ep.arrive(rts(10, 82, data.length, new CmaKey(HostId.get(), Cma.pid(), 4096, data.length).pack()));
        List<String> r = replies();
        assertEquals(1, r.size());
        assertTrue(r.get(0).startsWith("RTR 82 ") && r.get(0).endsWith(" 3000"), r.toString());
        assertEquals(1, ep.worker.counters().count(RndvProtocols.RECV_GET_FALLBACK_COUNTER));
        assertFalse(p.isDone());
        assertEquals(List.of(), ep.endpoint.rmaFailures());
    }

    @Test
    void withSchemeAmAKeyCarryingRtsIsAnsweredByRtrAndTheKeyIsNotEvenRead() {
        EmbeddedChannel am = new EmbeddedChannel();
        WorkerProtocols w = TestEndpoint.worker(am, TestEndpoint.settings(1 << 30, RndvScheme.AM,
                ProtocolRegistry.DEFAULT.protocols()));
        TestEndpoint services = new TestEndpoint(am, RndvEndpoint.defaultLane()).rma(ep.lane);
        RndvCodec c = new RndvCodec(services, w);
        am.pipeline().addLast(c);
        PostedReceives rs = new PostedReceives(w.matcher(), am.eventLoop());
        Promise<TagMessage> p = rs.post(11, -1L);
        am.writeInbound(rts(11, 83, 3000, new byte[13])); // a key no lane would accept
        AmFrame rtr = am.readOutbound();
        assertEquals(AmIds.RNDV_RTR, rtr.amId());
        assertEquals(RndvHeaders.RTR_LENGTH, rtr.header().readableBytes());
        assertEquals(83, rtr.header().getLongLE(0));
        rtr.release();
        assertEquals(0, w.counters().count(RndvProtocols.RECV_GET_FALLBACK_COUNTER), "nothing to fall back from");
        c.endpointEnded(new ClosedChannelException());
        assertInstanceOf(IOException.class, p.cause());
        rs.close();
        assertFalse(am.finishAndReleaseAll());
    }

    /**
     * A receive on an endpoint whose message lanes all place payloads as they arrive gets its whole buffer at once (the
     * user's, or one of the library's) and offers the whole message as one fragment in its RTR; on lanes that do not,
     * it offers none.
     */
    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.ValueSource(booleans = {true, false})
    void anRtrOffersTheWholeMessageAsOneFragmentWhenEveryMessageLanePlaces(boolean placing) {
        EmbeddedChannel am = new EmbeddedChannel();
        WorkerProtocols w = TestEndpoint.worker(am, TestEndpoint.settings(1 << 30, RndvScheme.AUTO,
                ProtocolRegistry.DEFAULT.protocols()));
        EndpointConfig lanes = RndvEndpoint.defaultLane();
        if (placing) {
            lanes = new EndpointConfig(lanes.amLane(), lanes.amLaneAttrs().withMaxPlaced(1 << 30));
        }
        RndvCodec c = new RndvCodec(new TestEndpoint(am, lanes), w);
        am.pipeline().addLast(c);
        PostedReceives rs = new PostedReceives(w.matcher(), am.eventLoop());
        ByteBuf into = Unpooled.directBuffer(3_000_000);
        Promise<TagMessage> p = rs.post(12, -1L, into);
        Promise<TagMessage> own = rs.post(13, -1L); // no buffer given: one of the library's, placed in the same way
        am.writeInbound(rts(12, 85, 3_000_000, null));
        am.writeInbound(rts(13, 86, 3_000_000, null));
        AmFrame rtr = am.readOutbound();
        AmFrame rtr2 = am.readOutbound();
        try {
            assertEquals(AmIds.RNDV_RTR, rtr.amId());
            assertEquals(85, rtr.header().getLongLE(0));
            assertEquals(placing ? 3_000_000 : 0, RndvHeaders.readRtrPlacedFragment(rtr.header()),
                    "into the user's buffer");
            assertEquals(86, rtr2.header().getLongLE(0));
            assertEquals(placing ? 3_000_000 : 0, RndvHeaders.readRtrPlacedFragment(rtr2.header()),
                    "into a buffer of the library's");
        } finally {
            rtr.release();
            rtr2.release();
        }
        c.endpointEnded(new ClosedChannelException());
        assertInstanceOf(IOException.class, p.cause());
        assertInstanceOf(IOException.class, own.cause());
        rs.close();
        into.release();
        assertFalse(am.finishAndReleaseAll());
    }

    @Test
    void anEmptyMessageCompletesAtOnceAndTheSenderIsToldByAts() {
        Promise<TagMessage> p = ep.receives.post(12, -1L);
        ep.arrive(rts(12, 84, 0, null));
        assertArrayEquals(new byte[0], ep.receives.bytes(p));
        assertEquals(List.of("ATS 84 0"), replies());
        assertEquals("rndv: 0 sends waiting, 0 receives, 0 held", ep.describe());
    }

    @Test
    void theSenderGoingAwayMidReadFailsTheReceiveAndReleasesEverything() {
        assumeTrue(ep.lane != null, () -> Cma.availability().reason());
        int n = (int) (3 * Cma.CHUNK);
        byte[] data = pattern(7, n);
        ByteBuf heap = Unpooled.buffer(n); // bounce path: a pooled direct chunk is held between chunks
        ep.hold(heap);
        Promise<TagMessage> p = ep.receives.post(11, -1L, heap);
        ep.arrive(rts(11, 83, n, CmaKey.of(source(data).nioBuffer()).pack()));
        assertFalse(p.isDone(), "one chunk per loop turn");
        IOException cause = new IOException("lane closed");
        ep.codec.endpointEnded(cause);
        ep.ch.runPendingTasks(); // the next chunk finds the read cancelled
        assertTrue(p.isDone() && !p.isSuccess());
        assertTrue(p.cause().getMessage().contains("went away"), p.cause().getMessage());
        assertSame(cause, p.cause().getCause());
        assertEquals(List.of(), replies(), "no ATS to a peer that is gone");
        assertEquals("rndv: 0 sends waiting, 0 receives, 0 held", ep.describe());
        assertArrayEquals(new byte[0], bytes(heap), "nothing published into the user's buffer");
        assertFalse(ep.codec.lingers(), "a read holds nothing the peer could still write");
    }

    @Test
    void anUnexpectedRtsOfAnEndedEndpointLeavesTheUnexpectedQueue() {
        ep.arrive(rts(13, 85, 1000, null));
        assertEquals(1, ep.worker.matcher().unexpectedCount());
        ep.codec.endpointEnded(new IOException("gone"));
        assertEquals(0, ep.worker.matcher().unexpectedCount());
        Promise<TagMessage> p = ep.receives.post(13, -1L);
        assertFalse(p.isDone(), "no receive takes it");
        assertEquals(List.of(), replies());
    }
}
