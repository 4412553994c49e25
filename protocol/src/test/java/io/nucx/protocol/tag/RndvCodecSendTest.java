package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.EndpointConfig;
import io.nucx.protocol.ProtocolCodec;
import io.nucx.protocol.ProtocolException;
import io.nucx.protocol.ProtocolRegistry;
import io.nucx.protocol.ProtocolSettings;
import io.nucx.protocol.TestEndpoint;
import io.nucx.protocol.WorkerProtocols;
import io.nucx.protocol.am.AmData;
import io.nucx.protocol.select.ProtoCandidate;
import io.nucx.transport.AmFrame;
import io.nucx.transport.Capability;
import io.nucx.transport.IfaceAttributes;
import io.nucx.transport.cma.Cma;
import io.nucx.transport.cma.CmaChannel;
import io.nucx.transport.cma.CmaKey;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.MemorySegment;
import java.nio.channels.ClosedChannelException;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;

import static io.nucx.protocol.tag.RndvEndpoint.ats;
import static io.nucx.protocol.tag.RndvEndpoint.bytes;
import static io.nucx.protocol.tag.RndvEndpoint.direct;
import static io.nucx.protocol.tag.RndvEndpoint.pattern;
import static io.nucx.protocol.tag.RndvEndpoint.rtr;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The send side of {@code tag/rndv} and {@code rndv/get/zcopy} in {@link RndvCodec}: a {@link RndvSendRequest}
 * becomes an RTS (with the send buffer's key when it offers GET) and waits in its stage for RTR (fragments) or ATS;
 * malformed or unknown answers are {@link ProtocolException}s; the endpoint's end fails what waits. Also the hand-off
 * from the eager codec, and a GET between two codecs.
 */
@Timeout(60)
class RndvCodecSendTest {

    private static final int MAX_BCOPY = 65536;
    private static final int FRAGMENT = MAX_BCOPY - RndvHeaders.DATA_LENGTH;

    private final List<RndvEndpoint> endpoints = new ArrayList<>();
    /** The endpoint made last. */
    private RndvEndpoint ep;

    @AfterEach
    void tearDown() {
        endpoints.forEach(RndvEndpoint::close);
    }

    private EmbeddedChannel channel(EndpointConfig config, boolean withLane) {
        ep = new RndvEndpoint(RndvScheme.AUTO, config, withLane);
        endpoints.add(ep);
        return ep.ch;
    }

    private EmbeddedChannel channel() {
        return channel(RndvEndpoint.defaultLane(), false);
    }

    /** Sends {@code content} by rendezvous; returns the RTS that went out. */
    private static AmFrame send(EmbeddedChannel ch, RndvSendRequest req, ChannelFuture[] future) {
        future[0] = ch.writeAndFlush(req);
        AmFrame rts = ch.readOutbound();
        assertEquals(AmIds.RNDV_RTS, rts.amId());
        return rts;
    }

    private static long senderReqId(AmFrame rts) {
        try {
            return rts.header().getLongLE(8);
        } finally {
            rts.release();
        }
    }

    @Test
    void anRtsWaitsForTheRtrThenTheDataGoAsFragmentsTheLastCarryingThePromise() {
        EmbeddedChannel ch = channel();
        byte[] data = pattern(1, 150_000);
        ByteBuf content = Unpooled.wrappedBuffer(data);
        ChannelFuture[] f = new ChannelFuture[1];
        AmFrame rts = send(ch, new RndvSendRequest(0x42, content), f);
        assertEquals(RndvHeaders.RTS_LENGTH, rts.header().readableBytes(), "tag/rndv's RTS is plain");
        assertEquals(0x42, rts.header().getLongLE(0));
        assertEquals(150_000, rts.header().getLongLE(16));
        long id = senderReqId(rts);
        assertFalse(f[0].isDone());
        assertEquals(1, ep.codec.sendsWaiting());
        List<Future<?>> outstanding = new ArrayList<>();
        ep.codec.collectOutstanding(outstanding);
        assertEquals(List.of(f[0]), outstanding, "a graceful close waits for it");
        ch.writeInbound(rtr(id, 900, 150_000, null));
        assertArrayEquals(data, ep.dataFrames(900, data.length, FRAGMENT));
        assertTrue(f[0].isSuccess());
        assertEquals(0, content.refCnt(), "released once its fragments were");
        assertEquals(0, ep.codec.sendsWaiting());
        assertFalse(ep.codec.lingers());
    }

    /** The frames after an RTR: payload sizes, flags and bytes, in order from offset 0. */
    private static List<Integer> placedFrames(EmbeddedChannel ch, long receiverReq, byte[] expected, int flags) {
        List<Integer> sizes = new ArrayList<>();
        byte[] got = new byte[expected.length];
        int seen = 0;
        for (AmFrame f; seen < expected.length && (f = ch.readOutbound()) != null; ) {
            try {
                assertEquals(AmIds.RNDV_DATA, f.amId());
                assertEquals(receiverReq, f.header().getLongLE(0));
                assertEquals(seen, f.header().getLongLE(8), "in order from offset 0");
                assertEquals(flags, f.flags(), "flags of the fragment at " + seen);
                int len = f.payload().readableBytes();
                f.payload().getBytes(f.payload().readerIndex(), got, seen, len);
                seen += len;
                sizes.add(len);
            } finally {
                f.release();
            }
        }
        assertArrayEquals(expected, got);
        return sizes;
    }

    /**
     * A receiver that places the data as they arrive offers larger fragments in its RTR (tcp reading into the receive
     * buffer): when every message lane of the sender's carries placed frames, the data go as one frame per lane,
     * flagged {@link AmFrame#FLAG_PLACED}; else, or when the offer is no larger than its own, as its own fragments.
     */
    @Test
    void placedFragmentsAreAsLargeAsTheReceiverOffersWhenEveryMessageLaneCarriesThem() {
        IfaceAttributes placing = TestEndpoint.amLane(8192, MAX_BCOPY).amLaneAttrs().withMaxPlaced(1 << 30);
        byte[] data = pattern(5, 1 << 20);
        ChannelFuture[] f = new ChannelFuture[1];

        EmbeddedChannel ch = channel(new EndpointConfig("test/lo", placing), false);
        long id = senderReqId(send(ch, new RndvSendRequest(1, Unpooled.wrappedBuffer(data)), f));
        ch.writeInbound(placedRtr(id, 910, data.length, data.length));
        assertEquals(List.of(data.length), placedFrames(ch, 910, data, AmFrame.FLAG_PLACED), "one frame");
        assertTrue(f[0].isSuccess());

        ch = channel(new EndpointConfig("test/lo", placing), false);
        id = senderReqId(send(ch, new RndvSendRequest(1, Unpooled.wrappedBuffer(data)), f));
        ch.writeInbound(placedRtr(id, 911, data.length, 300_000));
        assertEquals(List.of(262_144, 262_144, 262_144, 262_144), placedFrames(ch, 911, data, AmFrame.FLAG_PLACED),
                "no larger than offered, as few as fit, of even size");

        ch = channel(new EndpointConfig("test/lo", placing, null, null,
                List.of(new EndpointConfig.BwLane("test/lo2", placing))), false);
        id = senderReqId(send(ch, new RndvSendRequest(1, Unpooled.wrappedBuffer(data)), f));
        ch.writeInbound(placedRtr(id, 912, data.length, data.length));
        assertEquals(List.of(data.length / 2, data.length / 2), placedFrames(ch, 912, data, AmFrame.FLAG_PLACED),
                "one per message lane, so that both carry it");

        ch = channel(new EndpointConfig("test/lo", placing, null, null,
                List.of(new EndpointConfig.BwLane("shm/memory", TestEndpoint.amLane(8192, MAX_BCOPY)
                        .amLaneAttrs()))), false);
        id = senderReqId(send(ch, new RndvSendRequest(1, Unpooled.wrappedBuffer(data)), f));
        ch.writeInbound(placedRtr(id, 913, data.length, data.length));
        assertEquals(17, placedFrames(ch, 913, data, 0).size(), "a lane that does not place: our own fragments");

        ch = channel(new EndpointConfig("test/lo", placing.withMaxPlaced(200_016)), false);
        id = senderReqId(send(ch, new RndvSendRequest(1, Unpooled.wrappedBuffer(data)), f));
        ch.writeInbound(placedRtr(id, 915, data.length, data.length));
        List<Integer> sizes = placedFrames(ch, 915, data, AmFrame.FLAG_PLACED);
        assertEquals(6, sizes.size(), "no larger than the lanes carry: " + sizes);
        assertTrue(sizes.stream().allMatch(n -> n <= 200_000), sizes::toString);

        ch = channel(new EndpointConfig("test/lo", placing), false);
        id = senderReqId(send(ch, new RndvSendRequest(1, Unpooled.wrappedBuffer(data)), f));
        ch.writeInbound(placedRtr(id, 914, data.length, 1000));
        assertEquals(17, placedFrames(ch, 914, data, 0).size(), "an offer below our fragment: ours");
        assertTrue(f[0].isSuccess());
    }

    private static AmFrame placedRtr(long senderReq, long receiverReq, long size, int placedFragment) {
        return AmFrame.of(AmIds.RNDV_RTR, RndvHeaders.writeRtr(Unpooled.buffer(), senderReq, receiverReq, size,
                placedFragment, null));
    }

    @Test
    void fragmentsFitTheSmallestOfTheMessageLanes() {
        IfaceAttributes narrow = new IfaceAttributes(EnumSet.of(Capability.AM_SHORT, Capability.AM_BCOPY), 256,
                8192, 64, 1e-6, 0, 1e9, 0, 1e-7, 0);
        EndpointConfig striped = new EndpointConfig("test/lo", TestEndpoint.amLane(8192, MAX_BCOPY).amLaneAttrs(),
                null, null, List.of(new EndpointConfig.BwLane("test/lo2", narrow)));
        EmbeddedChannel ch = channel(striped, false);
        byte[] data = pattern(2, 20_000);
        ChannelFuture[] f = new ChannelFuture[1];
        long id = senderReqId(send(ch, new RndvSendRequest(1, Unpooled.wrappedBuffer(data)), f));
        ch.writeInbound(rtr(id, 901, data.length, null));
        assertArrayEquals(data, ep.dataFrames(901, data.length, 8192 - RndvHeaders.DATA_LENGTH));
        assertTrue(f[0].isSuccess());
    }

    @Test
    void anRtrForAnotherSizeFailsTheSendAndUnknownOrMalformedAnswersAreProtocolErrors() {
        EmbeddedChannel ch = channel();
        ByteBuf content = Unpooled.wrappedBuffer(pattern(3, 5000));
        ChannelFuture[] f = new ChannelFuture[1];
        long id = senderReqId(send(ch, new RndvSendRequest(1, content), f));
        ProtocolException e = assertThrows(ProtocolException.class,
                () -> ch.writeInbound(rtr(id + 1, 1, 5000, null)));
        assertTrue(e.getMessage().contains("RTR for unknown rendezvous send " + (id + 1)), e.getMessage());
        e = assertThrows(ProtocolException.class, () -> ch.writeInbound(ats(id + 1, 0)));
        assertTrue(e.getMessage().contains("ATS for unknown rendezvous send " + (id + 1)), e.getMessage());
        AmFrame shortAts = AmFrame.of(AmIds.RNDV_ATS, Unpooled.buffer(8).writeLongLE(id));
        e = assertThrows(ProtocolException.class, () -> ch.writeInbound(shortAts));
        assertTrue(e.getMessage().contains("RNDV_ATS header is 8 bytes, expected 9"), e.getMessage());
        assertEquals(0, shortAts.refCnt());
        AmFrame badKey = AmFrame.of(AmIds.RNDV_RTR, RndvHeaders.writeRtr(Unpooled.buffer(), id, 1, 5000,
                new byte[28]).writerIndex(44));
        e = assertThrows(ProtocolException.class, () -> ch.writeInbound(badKey));
        assertTrue(e.getMessage().contains("RNDV_RTR remote key length is 28, but the header has 14 bytes after it"),
                e.getMessage());
        AmFrame shortRtr = AmFrame.of(AmIds.RNDV_RTR, Unpooled.buffer(16).writeLongLE(id).writeLongLE(1));
        e = assertThrows(ProtocolException.class, () -> ch.writeInbound(shortRtr));
        assertTrue(e.getMessage().contains("RNDV_RTR header is 16 bytes, expected 28"), e.getMessage());
        assertEquals(0, shortRtr.refCnt());
        assertFalse(f[0].isDone(), "none of these touched the send");
        ch.writeInbound(rtr(id, 902, 4000, null));
        ProtocolException sizeError = assertInstanceOf(ProtocolException.class, f[0].cause());
        assertTrue(sizeError.getMessage().contains("receiver asked for 4000 bytes of a 5000-byte rendezvous send"),
                sizeError.getMessage());
        assertNull(ch.readOutbound(), "no data, and no ATP: no buffer of the receiver was offered");
        assertEquals(0, content.refCnt());
        assertEquals(0, ep.codec.sendsWaiting());
    }

    @Test
    void atsEndsTheSendAsItsStatusSays() {
        EmbeddedChannel ch = channel();
        ChannelFuture[] ok = new ChannelFuture[1];
        ChannelFuture[] truncated = new ChannelFuture[1];
        ChannelFuture[] odd = new ChannelFuture[1];
        ByteBuf c1 = Unpooled.wrappedBuffer(pattern(4, 100));
        long id1 = senderReqId(send(ch, new RndvSendRequest(1, c1), ok));
        long id2 = senderReqId(send(ch, new RndvSendRequest(0x22, Unpooled.wrappedBuffer(pattern(5, 200))),
                truncated));
        long id3 = senderReqId(send(ch, new RndvSendRequest(3, Unpooled.wrappedBuffer(pattern(6, 300))), odd));
        ch.writeInbound(ats(id1, RndvHeaders.STATUS_OK));
        assertTrue(ok[0].isSuccess());
        assertEquals(0, c1.refCnt());
        ch.writeInbound(ats(id2, RndvHeaders.STATUS_TRUNCATED));
        MessageTruncatedException e = assertInstanceOf(MessageTruncatedException.class, truncated[0].cause());
        assertEquals(0x22, e.tag());
        assertEquals(200, e.length());
        ch.writeInbound(ats(id3, 7));
        assertInstanceOf(ProtocolException.class, odd[0].cause());
        assertTrue(odd[0].cause().getMessage().contains("rendezvous send " + id3 + " ended with status 7"),
                odd[0].cause().getMessage());
        assertEquals(0, ep.codec.sendsWaiting());
    }

    @Test
    void theEndpointEndingFailsWaitingSendsAndReleasesThem() {
        EmbeddedChannel ch = channel();
        ByteBuf content = Unpooled.wrappedBuffer(pattern(7, 5000));
        ChannelFuture[] f = new ChannelFuture[1];
        senderReqId(send(ch, new RndvSendRequest(1, content), f));
        IllegalStateException cause = new IllegalStateException("ended");
        ep.codec.endpointEnded(cause);
        assertSame(cause, f[0].cause());
        assertEquals(0, content.refCnt());
        assertFalse(ep.codec.lingers(), "nothing was offered to or written into the peer");
        assertEquals(List.of(), ep.endpoint.directFrames(), "no last words for a send waiting for its RTR");
    }

    @Test
    void aGetOfferCarriesTheSendBuffersKeyOnlyForNativeMemoryAndAPermittedLane() {
        assumeTrue(Cma.availability().isAvailable(), () -> Cma.availability().reason());
        EmbeddedChannel ch = channel(TestEndpoint.amLane(8192, MAX_BCOPY), true);
        ByteBuf content = direct(pattern(8, 5000));
        ChannelFuture[] f = new ChannelFuture[1];
        AmFrame rts = send(ch, new RndvSendRequest(1, content, true), f);
        assertEquals(RndvHeaders.rtsLength(RndvEndpoint.bundle(new byte[CmaKey.PACKED_LENGTH])),
                rts.header().readableBytes());
        CmaKey key = CmaKey.unpack(RndvEndpoint.unbundle(RndvHeaders.readRtsKey(rts.header())));
        assertEquals(Cma.pid(), key.pid());
        assertEquals(MemorySegment.ofBuffer(content.nioBuffer()).address(), key.address());
        assertEquals(5000, key.length());
        long id = senderReqId(rts);
        ch.writeInbound(ats(id, RndvHeaders.STATUS_OK));
        assertTrue(f[0].isSuccess());
        assertEquals(0, content.refCnt());

        ChannelFuture[] heap = new ChannelFuture[1];
        AmFrame plain = send(ch, new RndvSendRequest(2, Unpooled.wrappedBuffer(pattern(9, 5000)), true), heap);
        assertEquals(RndvHeaders.RTS_LENGTH, plain.header().readableBytes(), "heap memory moves: no key");
        ch.writeInbound(ats(senderReqId(plain), RndvHeaders.STATUS_OK));
        ep.endpoint.rma(null);
        ChannelFuture[] noLane = new ChannelFuture[1];
        plain = send(ch, new RndvSendRequest(3, direct(pattern(10, 5000)), true), noLane);
        assertEquals(RndvHeaders.RTS_LENGTH, plain.header().readableBytes(), "no permitted lane: no key");
        ch.writeInbound(ats(senderReqId(plain), RndvHeaders.STATUS_OK));
        assertTrue(heap[0].isSuccess() && noLane[0].isSuccess());
    }

    /** Two endpoints, each with a cma lane to this process: the receiver reads the sender's buffer, then ATS. */
    @Test
    void aGetBetweenTwoCodecsMovesTheMessageAndAtsCompletesTheSend() {
        assumeTrue(Cma.availability().isAvailable(), () -> Cma.availability().reason());
        EmbeddedChannel rx = channel(TestEndpoint.amLane(8192, MAX_BCOPY), true);
        WorkerProtocols rxWorker = ep.worker;
        EmbeddedChannel tx = channel(TestEndpoint.amLane(8192, MAX_BCOPY), true);
        int n = (int) (Cma.CHUNK + 999);
        byte[] data = pattern(11, n);
        ByteBuf content = direct(data);
        ChannelFuture[] f = new ChannelFuture[1];
        rx.writeInbound(send(tx, new RndvSendRequest(0x61, content, true), f));
        PostedReceives rs = new PostedReceives(rxWorker.matcher(), rx.eventLoop());
        Promise<TagMessage> p = rs.post(0x61, -1L);
        rx.runPendingTasks();
        assertArrayEquals(data, rs.bytes(p));
        rs.close();
        AmFrame ats = rx.readOutbound();
        assertEquals(AmIds.RNDV_ATS, ats.amId());
        assertFalse(f[0].isDone(), "not before the receiver said it has read");
        tx.writeInbound(ats);
        assertTrue(f[0].isSuccess());
        assertEquals(0, content.refCnt());
        assertEquals(1, rxWorker.counters().count(RndvProtocols.RECV_GET_COUNTER));
    }

    /** A tagged message the table gives to rendezvous goes down from the eager codec as an RTS, counted. */
    @Test
    void theEagerCodecHandsARendezvousSendToThisCodec() {
        EmbeddedChannel ch = new EmbeddedChannel();
        ProtocolSettings rndvFrom4k = new ProtocolSettings(1 << 30, ProtoCandidate.AUTO, ProtoCandidate.AUTO, 4096,
                false, RndvScheme.AUTO, ProtocolRegistry.DEFAULT.protocols());
        WorkerProtocols w = TestEndpoint.worker(ch, rndvFrom4k);
        ProtocolRegistry.DEFAULT.initPipeline(ch.pipeline(), new TestEndpoint(ch, TestEndpoint.amLane(8192,
                MAX_BCOPY)), w);
        ByteBuf content = Unpooled.wrappedBuffer(pattern(12, 5000));
        ChannelFuture sent = ch.writeAndFlush(new TagMessage(0x71, content));
        AmFrame rts = ch.readOutbound();
        assertEquals(AmIds.RNDV_RTS, rts.amId());
        assertEquals(0x71, rts.header().getLongLE(0));
        assertEquals(5000, rts.header().getLongLE(16));
        assertEquals(1, w.counters().count(RndvProtocols.TAG_RNDV.name()));
        assertFalse(sent.isDone());
        assertFalse(sent.isCancellable(), "handed on: it cannot be taken back");
        ch.writeInbound(ats(senderReqId(rts), RndvHeaders.STATUS_OK));
        assertTrue(sent.isSuccess());
        assertEquals(0, content.refCnt());
        assertFalse(ch.finishAndReleaseAll());
    }

    /**
     * With an RMA lane offering GET_ZCOPY in the endpoint's configuration, a large native message goes as
     * {@code rndv/get/zcopy} (its RTS carries the buffer's key), a heap one as {@code tag/rndv}, each counted.
     */
    @Test
    void theTableGivesLargeNativeMessagesToGetZcopyAndTheRtsCarriesTheKey() {
        assumeTrue(Cma.availability().isAvailable(), () -> Cma.availability().reason());
        IfaceAttributes cmaLike = new IfaceAttributes(EnumSet.of(Capability.GET_ZCOPY, Capability.PUT_ZCOPY), 0, 0,
                0, 80e-9, 0, 11145e6, 0, 2e-6, 0, Long.MAX_VALUE, Integer.MAX_VALUE, Cma.CHUNK);
        EndpointConfig withRma = new EndpointConfig("test/lo", RndvEndpoint.defaultLane().amLaneAttrs(),
                "cma/memory", cmaLike);
        EmbeddedChannel ch = new EmbeddedChannel();
        ProtocolSettings rndvFrom4k = new ProtocolSettings(1 << 30, ProtoCandidate.AUTO, ProtoCandidate.AUTO, 4096,
                false, RndvScheme.AUTO, ProtocolRegistry.DEFAULT.protocols());
        WorkerProtocols w = TestEndpoint.worker(ch, rndvFrom4k);
        CmaChannel lane = TestEndpoint.cmaLane(ch, Cma.pid());
        List<ProtocolCodec> codecs = ProtocolRegistry.DEFAULT.initPipeline(ch.pipeline(),
                new TestEndpoint(ch, withRma).rma(lane), w);
        ByteBuf nativeContent = direct(pattern(13, 1 << 20));
        ChannelFuture sent = ch.writeAndFlush(new TagMessage(0x72, nativeContent));
        AmFrame rts = ch.readOutbound();
        assertEquals(RndvHeaders.rtsLength(RndvEndpoint.bundle(new byte[CmaKey.PACKED_LENGTH])),
                rts.header().readableBytes());
        assertEquals(1, w.counters().count(RndvProtocols.GET_ZCOPY.name()));
        ch.writeInbound(ats(senderReqId(rts), RndvHeaders.STATUS_OK));
        assertTrue(sent.isSuccess());
        ChannelFuture heap = ch.writeAndFlush(new TagMessage(0x73, Unpooled.wrappedBuffer(pattern(14, 1 << 20))));
        rts = ch.readOutbound();
        assertEquals(RndvHeaders.RTS_LENGTH, rts.header().readableBytes());
        assertEquals(1, w.counters().count(RndvProtocols.TAG_RNDV.name()));
        codecs.forEach(c -> c.endpointEnded(new ClosedChannelException()));
        assertInstanceOf(ClosedChannelException.class, heap.cause());
        rts.release();
        lane.close();
        assertFalse(ch.finishAndReleaseAll());
    }

    /**
     * The traffic of {@code rndv/get/zcopy} counts RTSes that carried the send buffer's key: an offer withdrawn before
     * its RTS (an active message's user header leaves the key no room in the frame) goes, and is counted, as
     * {@code tag/rndv}, and a fallback; so does an offer the receiver answers by RTR rather than reading it.
     */
    @Test
    void getZcopyCountsOnlyTheOffersThatWentAndTheReceiverReadAndFallbacksApart() {
        assumeTrue(Cma.availability().isAvailable(), () -> Cma.availability().reason());
        IfaceAttributes cmaLike = new IfaceAttributes(EnumSet.of(Capability.GET_ZCOPY, Capability.PUT_ZCOPY), 0, 0,
                0, 80e-9, 0, 11145e6, 0, 2e-6, 0, Long.MAX_VALUE, Integer.MAX_VALUE, Cma.CHUNK);
        // Frames of 4 KiB, as shm's: an active message's user header (at most 4 KiB) may fill an RTS.
        EndpointConfig withRma = new EndpointConfig("test/lo", TestEndpoint.amLane(1024, 4096).amLaneAttrs(),
                "cma/memory", cmaLike);
        EmbeddedChannel ch = new EmbeddedChannel();
        WorkerProtocols w = TestEndpoint.worker(ch, new ProtocolSettings(1 << 30, ProtoCandidate.AUTO,
                ProtoCandidate.AUTO, 4096, false, RndvScheme.AUTO, ProtocolRegistry.DEFAULT.protocols()));
        CmaChannel lane = TestEndpoint.cmaLane(ch, Cma.pid());
        List<ProtocolCodec> codecs = ProtocolRegistry.DEFAULT.initPipeline(ch.pipeline(),
                new TestEndpoint(ch, withRma).rma(lane), w);
        int roomForHeader = withRma.amLaneAttrs().maxBcopy() - RndvHeaders.RTS_LENGTH;
        // An active message whose user header fills the RTS: the tables' rndv/get/zcopy, its key left out.
        ChannelFuture[] f = {ch.writeAndFlush(new AmData(7, Unpooled.wrappedBuffer(pattern(15, roomForHeader)),
                direct(pattern(16, 1 << 20)), false))};
        AmFrame rts = ch.readOutbound();
        assertEquals(MessageKind.AM.rtsId(), rts.amId());
        assertEquals(RndvHeaders.RTS_LENGTH + roomForHeader, rts.header().readableBytes()
                + rts.payload().readableBytes(), "the RTS went without a key");
        ch.writeInbound(ats(senderReqId(rts), RndvHeaders.STATUS_OK));
        assertTrue(f[0].isSuccess());
        assertEquals(0, w.counters().count(RndvProtocols.GET_ZCOPY.name()));
        assertEquals(1, w.counters().count(RndvProtocols.TAG_RNDV.name()));
        assertEquals(1, w.counters().count(RndvProtocols.GET_FALLBACK_COUNTER));
        // One byte more of user header, and no RTS holds it: the message goes by eager fragments, counted apart.
        f[0] = ch.writeAndFlush(new AmData(7, Unpooled.wrappedBuffer(pattern(18, roomForHeader + 1)),
                direct(pattern(19, 1 << 20)), false));
        AmFrame first = ch.readOutbound();
        assertEquals(MessageKind.AM.firstId(), first.amId(), "an eager first fragment, not an RTS");
        first.release();
        for (AmFrame d; (d = ch.readOutbound()) != null; ) {
            d.release();
        }
        assertTrue(f[0].isSuccess());
        assertEquals(1, w.counters().count(RndvProtocols.AM_HEADER_FALLBACK_COUNTER));
        assertEquals(1, w.counters().count(EagerProtocols.MULTI_BCOPY.name()));
        assertEquals(1, w.counters().count(RndvProtocols.TAG_RNDV.name()));

        byte[] data = pattern(17, 100_000);
        rts = send(ch, new RndvSendRequest(0x75, direct(data), true), f);
        assertEquals(RndvHeaders.rtsLength(RndvEndpoint.bundle(new byte[CmaKey.PACKED_LENGTH])),
                rts.header().readableBytes(), "the key went");
        assertEquals(1, w.counters().count(RndvProtocols.GET_ZCOPY.name()));
        assertEquals(1, w.counters().count(RndvProtocols.GET_FALLBACK_COUNTER), "not until the receiver says");
        ch.writeInbound(rtr(senderReqId(rts), 900, data.length, null)); // it asks for the data instead
        assertEquals(2, w.counters().count(RndvProtocols.GET_FALLBACK_COUNTER));
        ByteBuf received = Unpooled.buffer(data.length);
        for (AmFrame d; (d = ch.readOutbound()) != null; ) {
            assertEquals(AmIds.RNDV_DATA, d.amId());
            received.writeBytes(d.payload());
            d.release();
        }
        assertArrayEquals(data, bytes(received));
        assertTrue(f[0].isSuccess());
        assertEquals(1, w.counters().count(RndvProtocols.GET_ZCOPY.name()));
        assertEquals(1, w.counters().count(RndvProtocols.TAG_RNDV.name()));
        codecs.forEach(c -> c.endpointEnded(new ClosedChannelException()));
        lane.close();
        assertFalse(ch.finishAndReleaseAll());
    }
}
