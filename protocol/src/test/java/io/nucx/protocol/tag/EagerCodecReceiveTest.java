package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.util.concurrent.Promise;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.LimitExceededException;
import io.nucx.protocol.MemoryBudget;
import io.nucx.protocol.ProtocolException;
import io.nucx.protocol.TestEndpoint;
import io.nucx.protocol.WorkerProtocols;
import io.nucx.transport.AmFrame;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.channels.ClosedChannelException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The receive side of {@link EagerCodec}: eager frames arriving on an embedded endpoint (its codec's
 * {@code channelRead}) become messages for posted receives, the worker's unexpected queue or the pipeline; fragments
 * are put together per endpoint; malformed frames are {@link ProtocolException}s naming the value; an endpoint's end
 * aborts what it was still sending. A second endpoint ({@code other}) shares the worker.
 */
class EagerCodecReceiveTest {

    private static final long MAX = 1 << 20;
    private static final String WHOLE = "0123456789";

    private EmbeddedChannel ch;
    private EmbeddedChannel other;
    private WorkerProtocols worker;
    private TagMatcher matcher;
    private EagerCodec codec;
    private EagerCodec otherCodec;
    private PostedReceives receives;

    @BeforeEach
    void setUp() {
        ch = new EmbeddedChannel();
        other = new EmbeddedChannel();
        worker = TestEndpoint.worker(ch, TestEndpoint.settings(MAX, RndvScheme.AUTO, EagerProtocols.ALL));
        matcher = worker.matcher();
        receives = new PostedReceives(matcher, ch.eventLoop());
        codec = new EagerCodec(new TestEndpoint(ch, TestEndpoint.amLane(128, 1024)), worker);
        ch.pipeline().addLast(codec);
        otherCodec = new EagerCodec(new TestEndpoint(other, TestEndpoint.amLane(128, 1024)), worker);
        other.pipeline().addLast(otherCodec);
    }

    @AfterEach
    void tearDown() {
        receives.close();
        matcher.close(new ClosedChannelException());
        codec.endpointEnded(new ClosedChannelException());
        otherCodec.endpointEnded(new ClosedChannelException());
        assertFalse(ch.finishAndReleaseAll());
        assertFalse(other.finishAndReleaseAll());
    }

    /** {@code s} in UTF-8; shared with the other codec tests of this package. */
    static ByteBuf text(String s) {
        return Unpooled.copiedBuffer(s, StandardCharsets.UTF_8);
    }

    /** A header of little-endian longs. */
    static ByteBuf header(long... fields) {
        ByteBuf h = Unpooled.buffer(fields.length * 8);
        for (long f : fields) {
            h.writeLongLE(f);
        }
        return h;
    }

    private static AmFrame onlyFrame(long tag, ByteBuf payload) {
        return AmFrame.of(AmIds.EAGER_ONLY, 0, header(tag), payload);
    }

    private void only(long tag, String content) {
        ch.writeInbound(onlyFrame(tag, text(content)));
    }

    private static AmFrame firstFrame(long tag, long total, long msgId, ByteBuf payload) {
        return AmFrame.of(AmIds.EAGER_FIRST, 0, header(tag, total, msgId), payload);
    }

    private static AmFrame middleFrame(long msgId, long offset, ByteBuf payload) {
        return AmFrame.of(AmIds.EAGER_MIDDLE, 0, header(msgId, offset), payload);
    }

    /** FIRST carries bytes [0,4), MIDDLEs [4,7) and [7,10). */
    private void first(long tag, long msgId) {
        ch.writeInbound(firstFrame(tag, WHOLE.length(), msgId, text(WHOLE.substring(0, 4))));
    }

    private void middle(long msgId, int from, int to) {
        ch.writeInbound(middleFrame(msgId, from, text(WHOLE.substring(from, to))));
    }

    private int arriving(EagerCodec c) {
        List<String> out = new ArrayList<>();
        c.describeRequests(out);
        String s = out.get(0);
        return Integer.parseInt(s.substring(s.indexOf(", ") + 2, s.indexOf(" messages arriving")));
    }

    // ------------------------------------------------------------------ whole messages

    @Test
    void eagerOnlyFrameReachesThePostedReceiveAndIsReleased() {
        Promise<TagMessage> p = receives.post(42, -1L);
        AmFrame f = onlyFrame(42, text("hello"));
        ch.writeInbound(f);
        assertEquals(0, f.refCnt());
        receives.assertReceived(p, 42, "hello");
        assertNull(ch.readInbound(), "a message a receive took does not also go up the pipeline");
        assertNull(ch.readOutbound(), "nothing to acknowledge");
    }

    @Test
    void receivedMessageCarriesTheArrivedPayloadAndReleasingItReleasesThePayload() {
        ByteBuf payload = text("abc");
        Promise<TagMessage> p = receives.post(1, -1L);
        ch.writeInbound(onlyFrame(1, payload));
        TagMessage m = p.getNow();
        assertTrue(ByteBufUtil.equals(Unpooled.wrappedBuffer("abc".getBytes(StandardCharsets.UTF_8)), m.content()));
        assertEquals(1, payload.refCnt(), "the frame let go; the message holds the payload");
        m.release();
        assertEquals(0, payload.refCnt(), "the receiver owns the payload through the message");
    }

    @Test
    void eagerOnlyIntoTooSmallBufferFailsWithTruncationAndReleasesThePayload() {
        ByteBuf into = Unpooled.buffer(3, 3);
        Promise<TagMessage> p = receives.post(1, -1L, into);
        ByteBuf payload = text("four");
        ch.writeInbound(onlyFrame(1, payload));
        MessageTruncatedException e = assertInstanceOf(MessageTruncatedException.class, p.cause());
        assertEquals(4, e.length());
        assertEquals(3, e.capacity());
        assertEquals(0, payload.refCnt());
        assertEquals(0, into.writerIndex(), "nothing written into the user's buffer");
        into.release();
    }

    @Test
    void unexpectedWholeMessageWaitsForAReceiveThenIsCopiedIntoItsBuffer() {
        only(1, "cdef");
        assertEquals(1, matcher.unexpectedCount());
        ByteBuf into = Unpooled.buffer(16).writeBytes("ab".getBytes(StandardCharsets.US_ASCII));
        Promise<TagMessage> p = receives.post(1, -1L, into);
        receives.assertReceived(p, 1, "cdef");
        assertEquals("abcdef", into.toString(StandardCharsets.US_ASCII));
        into.release();
    }

    // ------------------------------------------------------------------ fragments

    @Test
    void firstAndMiddleFramesReassemble() {
        Promise<TagMessage> p = receives.post(42, -1L);
        ch.writeInbound(firstFrame(42, 10, 7, text("hello")));
        assertFalse(p.isDone());
        ch.writeInbound(middleFrame(7, 5, text("world")));
        receives.assertReceived(p, 42, "helloworld");
    }

    @Test
    void fragmentsReassembleIntoAReceivePostedBeforeTheFirst() {
        Promise<TagMessage> p = receives.post(3, -1L);
        first(3, 100);
        assertFalse(p.cancel(false), "its buffer takes the fragments still to come: no taking it back");
        middle(100, 4, 7);
        assertFalse(p.isDone());
        assertEquals(1, arriving(codec));
        middle(100, 7, 10);
        receives.assertReceived(p, 3, WHOLE);
        assertEquals(0, arriving(codec));
        assertEquals(0, matcher.unexpectedCount());
    }

    @Test
    void receivePostedBetweenFragmentsTakesOverTheReassembly() {
        first(3, 100);
        assertEquals(1, matcher.unexpectedCount());
        middle(100, 4, 7);
        Promise<TagMessage> p = receives.post(3, -1L);
        assertFalse(p.isDone());
        assertFalse(p.cancel(false), "matched while arriving: not cancellable");
        assertEquals(0, matcher.unexpectedCount());
        middle(100, 7, 10);
        receives.assertReceived(p, 3, WHOLE);
        assertEquals(0, arriving(codec));
    }

    @Test
    void maskedReceivePostedBetweenFragmentsTakesOverTheReassembly() {
        first(0x31, 100);
        Promise<TagMessage> p = receives.post(0x30, 0xf0);
        middle(100, 4, 7);
        middle(100, 7, 10);
        receives.assertReceived(p, 0x31, WHOLE);
    }

    @Test
    void receivePostedAfterTheLastFragmentTakesTheWholeMessage() {
        first(3, 100);
        middle(100, 4, 7);
        middle(100, 7, 10);
        assertEquals(0, arriving(codec));
        assertEquals(1, matcher.unexpectedCount());
        receives.assertReceived(receives.post(3, -1L), 3, WHOLE);
        assertEquals(0, matcher.unexpectedCount());
    }

    @Test
    void middleFragmentsMayArriveOutOfOffsetOrder() {
        Promise<TagMessage> p = receives.post(3, -1L);
        first(3, 100);
        middle(100, 7, 10);
        middle(100, 4, 7);
        receives.assertReceived(p, 3, WHOLE);
    }

    @Test
    void interleavedFragmentsOfTwoMessagesReassembleSeparately() {
        Promise<TagMessage> pa = receives.post(1, -1L);
        ch.writeInbound(firstFrame(1, 6, 11, text("aa")));
        ch.writeInbound(firstFrame(2, 6, 22, text("bb")));
        ch.writeInbound(middleFrame(22, 2, text("BB")));
        ch.writeInbound(middleFrame(11, 2, text("AA")));
        Promise<TagMessage> pb = receives.post(2, -1L);
        ch.writeInbound(middleFrame(11, 4, text("xx")));
        ch.writeInbound(middleFrame(22, 4, text("yy")));
        receives.assertReceived(pa, 1, "aaAAxx");
        receives.assertReceived(pb, 2, "bbBByy");
        assertEquals(0, arriving(codec));
    }

    @Test
    void fragmentsReassembleStraightIntoAUserBuffer() {
        ByteBuf into = Unpooled.buffer(32).writeByte('>');
        Promise<TagMessage> p = receives.post(3, -1L, into);
        first(3, 100);
        assertEquals(">0123", into.toString(0, 5, StandardCharsets.US_ASCII), "written in place as it arrives");
        assertEquals(1, into.writerIndex(), "published only when whole");
        middle(100, 4, 7);
        middle(100, 7, 10);
        receives.assertReceived(p, 3, WHOLE);
        assertEquals(">" + WHOLE, into.toString(StandardCharsets.US_ASCII));
        into.release();
    }

    @Test
    void fragmentedMessageTooLargeForTheUserBufferFailsAndTheRestIsDropped() {
        ByteBuf into = Unpooled.buffer(8, 8);
        Promise<TagMessage> p = receives.post(3, -1L, into);
        ByteBuf firstPayload = text(WHOLE.substring(0, 4));
        ch.writeInbound(firstFrame(3, WHOLE.length(), 100, firstPayload));
        MessageTruncatedException e = assertInstanceOf(MessageTruncatedException.class, p.cause());
        assertEquals(3, e.tag());
        assertEquals(WHOLE.length(), e.length());
        assertEquals(8, e.capacity());
        assertEquals(0, firstPayload.refCnt());
        ByteBuf last = text(WHOLE.substring(7));
        middle(100, 4, 7);
        ch.writeInbound(middleFrame(100, 7, last));
        assertEquals(0, last.refCnt());
        assertEquals(0, arriving(codec));
        assertEquals(0, matcher.unexpectedCount(), "the dropped message is not kept as unexpected");
        assertEquals(0, into.writerIndex());
        Promise<TagMessage> next = receives.post(3, -1L);
        only(3, "next");
        receives.assertReceived(next, 3, "next");
        into.release();
    }

    @Test
    void receiveIntoTooSmallBufferPostedBetweenFragmentsFailsWhenTheMessageCompletes() {
        first(3, 100);
        ByteBuf into = Unpooled.buffer(8, 8);
        Promise<TagMessage> p = receives.post(3, -1L, into);
        middle(100, 4, 7);
        assertFalse(p.isDone());
        middle(100, 7, 10);
        assertInstanceOf(MessageTruncatedException.class, p.cause());
        assertEquals(0, arriving(codec));
        assertEquals(0, into.writerIndex());
        into.release();
    }

    @Test
    void singleFragmentFirstCompletesAtOnce() {
        Promise<TagMessage> p = receives.post(3, -1L);
        ch.writeInbound(firstFrame(3, 4, 100, text("1234")));
        receives.assertReceived(p, 3, "1234");
        assertEquals(0, arriving(codec));
    }

    // ------------------------------------------------------------------ malformed frames

    @Test
    void headerOfTheWrongLengthIsAProtocolErrorAndTheFrameIsReleased() {
        AmFrame f = AmFrame.of(AmIds.EAGER_FIRST, 0, header(42, 10), text("hello"));
        ProtocolException e = assertThrows(ProtocolException.class, () -> ch.writeInbound(f));
        assertTrue(e.getMessage().contains("EAGER_FIRST header is 16 bytes, expected 24"), e.getMessage());
        assertEquals(0, f.refCnt());
        assertEquals(0, matcher.unexpectedCount());
        for (int id : new int[] {AmIds.EAGER_ONLY, AmIds.EAGER_MIDDLE, AmIds.EAGER_SYNC_ONLY, AmIds.EAGER_SYNC_FIRST,
            AmIds.EAGER_SYNC_ACK, AmIds.EAGER_ZCOPY_ONLY, AmIds.EAGER_ZCOPY_FIRST, AmIds.EAGER_ZCOPY_ACK}) {
            AmFrame bad = AmFrame.of(id, 0, header(1, 2, 3, 4, 5), text("x"));
            e = assertThrows(ProtocolException.class, () -> ch.writeInbound(bad));
            assertTrue(e.getMessage().contains(AmIds.name(id) + " header is 40 bytes, expected"), e.getMessage());
            assertEquals(0, bad.refCnt());
        }
        assertEquals(0, arriving(codec));
    }

    @Test
    void firstAnnouncingMoreThanTheMaximumIsAProtocolErrorAndItsPayloadIsReleased() {
        ByteBuf payload = text("x");
        ProtocolException e = assertThrows(ProtocolException.class,
                () -> ch.writeInbound(firstFrame(3, MAX + 1, 100, payload)));
        assertTrue(e.getMessage().contains(String.valueOf(MAX + 1)), e.getMessage());
        assertTrue(e.getMessage().contains("NUCX_MAX_MSG_SIZE allows " + MAX), e.getMessage());
        assertEquals(0, payload.refCnt());
        assertEquals(0, arriving(codec));
        assertEquals(0, matcher.unexpectedCount());
    }

    @Test
    void firstAnnouncingNegativeLengthIsAProtocolError() {
        ByteBuf payload = text("x");
        ProtocolException e = assertThrows(ProtocolException.class,
                () -> ch.writeInbound(firstFrame(3, -1, 100, payload)));
        assertTrue(e.getMessage().contains("announces -1 bytes"), e.getMessage());
        assertEquals(0, payload.refCnt());
    }

    @Test
    void firstCarryingMoreThanItAnnouncesIsAProtocolError() {
        ByteBuf payload = text("12345");
        ProtocolException e = assertThrows(ProtocolException.class,
                () -> ch.writeInbound(firstFrame(3, 4, 100, payload)));
        assertTrue(e.getMessage().contains("carries 5 bytes of a 4-byte message"), e.getMessage());
        assertEquals(0, payload.refCnt());
        assertEquals(0, matcher.unexpectedCount());
    }

    @Test
    void messageIdStartedTwiceIsAProtocolError() {
        first(3, 100);
        ByteBuf again = text("0123");
        ProtocolException e = assertThrows(ProtocolException.class,
                () -> ch.writeInbound(firstFrame(3, 10, 100, again)));
        assertTrue(e.getMessage().contains("message id 64 started twice"), e.getMessage());
        assertEquals(0, again.refCnt());
        Promise<TagMessage> p = receives.post(3, -1L);
        middle(100, 4, 7);
        middle(100, 7, 10);
        receives.assertReceived(p, 3, WHOLE);
    }

    @Test
    void middleOfUnknownMessageIsAProtocolErrorAndItsPayloadIsReleased() {
        ByteBuf payload = text("zz");
        ProtocolException e = assertThrows(ProtocolException.class,
                () -> ch.writeInbound(middleFrame(0xabc, 0, payload)));
        assertTrue(e.getMessage().contains("fragment of unknown message id abc"), e.getMessage());
        assertEquals(0, payload.refCnt());
    }

    /** Reassembly is per endpoint: another endpoint's fragment cannot touch a message of this one. */
    @Test
    void middleFromAnotherEndpointIsAProtocolError() {
        first(3, 100);
        ByteBuf payload = text("456");
        ProtocolException e = assertThrows(ProtocolException.class,
                () -> other.writeInbound(middleFrame(100, 4, payload)));
        assertTrue(e.getMessage().contains("unknown message id 64"), e.getMessage());
        assertEquals(0, payload.refCnt());
        assertEquals(1, arriving(codec));
        Promise<TagMessage> p = receives.post(3, -1L);
        middle(100, 4, 7);
        middle(100, 7, 10);
        receives.assertReceived(p, 3, WHOLE);
    }

    @Test
    void middleOutsideTheMessageIsAProtocolError() {
        first(3, 100);
        ByteBuf payload = text("789x");
        ProtocolException e = assertThrows(ProtocolException.class,
                () -> ch.writeInbound(middleFrame(100, 7, payload)));
        assertTrue(e.getMessage().contains("fragment [7, +4) lies outside message 64 of 10 bytes"), e.getMessage());
        assertEquals(0, payload.refCnt());
        ByteBuf negative = text("0");
        assertThrows(ProtocolException.class, () -> ch.writeInbound(middleFrame(100, -1, negative)));
        assertEquals(0, negative.refCnt());
    }

    // ------------------------------------------------------------------ the end of an endpoint, of the worker

    @Test
    void endpointEndingFailsAReceiveWaitingOnItsPartialMessage() {
        Promise<TagMessage> p = receives.post(3, -1L);
        first(3, 100);
        middle(100, 4, 7);
        IOException cause = new IOException("lane gone");
        codec.endpointEnded(cause);
        IOException e = assertInstanceOf(IOException.class, p.cause());
        assertSame(cause, e.getCause());
        assertTrue(e.getMessage().contains("went away after 7 of 10 bytes of message 64"), e.getMessage());
        assertEquals(0, arriving(codec));
        ByteBuf late = text("789");
        assertThrows(ProtocolException.class, () -> ch.writeInbound(middleFrame(100, 7, late)));
        assertEquals(0, late.refCnt());
    }

    @Test
    void endpointEndingWithdrawsItsPartialUnexpectedMessageButNotAnotherEndpoints() {
        first(3, 100);
        other.writeInbound(firstFrame(3, 4, 200, text("ab")));
        assertEquals(2, matcher.unexpectedCount());
        codec.endpointEnded(new IOException("gone"));
        assertEquals(1, matcher.unexpectedCount());
        assertEquals(0, arriving(codec));
        assertEquals(1, arriving(otherCodec));
        Promise<TagMessage> p = receives.post(3, -1L);
        other.writeInbound(middleFrame(200, 2, text("cd")));
        receives.assertReceived(p, 3, "abcd");
    }

    @Test
    void endpointEndingLeavesCompleteUnexpectedMessages() {
        only(4, "kept");
        codec.endpointEnded(new IOException("gone"));
        receives.assertReceived(receives.post(4, -1L), 4, "kept");
    }

    @Test
    void workerCloseFailsPostedReceivesReleasesHeldMessagesAndDropsTheRestOfArrivingOnes() {
        Promise<TagMessage> exact = receives.post(1, -1L);
        Promise<TagMessage> masked = receives.post(0x10, 0xf0);
        Promise<TagMessage> partial = receives.post(3, -1L);
        first(3, 100);
        ByteBuf unexpected = text("held");
        ch.writeInbound(onlyFrame(9, unexpected));
        ch.writeInbound(firstFrame(4, 10, 200, text("0123"))); // unexpected and still arriving
        ClosedChannelException cause = new ClosedChannelException();
        matcher.close(cause);
        assertSame(cause, exact.cause());
        assertSame(cause, masked.cause());
        assertEquals(0, unexpected.refCnt());
        assertEquals(0, matcher.expectedCount());
        assertEquals(0, matcher.unexpectedCount());
        assertFalse(partial.isDone(), "matched: it ends with its endpoint, which the worker closes next");
        ch.writeInbound(middleFrame(200, 4, text("456789"))); // the rest of the discarded one is dropped
        assertEquals(1, arriving(codec));
        ClosedChannelException end = new ClosedChannelException();
        codec.endpointEnded(end);
        assertSame(end, partial.cause().getCause());
        assertEquals(0, arriving(codec));
        Promise<TagMessage> late = receives.post(9, -1L);
        assertSame(cause, late.cause());
    }

    /**
     * An unexpected message in fragments is put together in one buffer of the whole taken at its first fragment
     * ({@code EagerReceiver.unowned}), charged in full; discarded (the worker's matcher closed), it lets go of that
     * buffer and its charge at once, and the rest of it is only counted: no fragment is placed anywhere any more.
     */
    @Test
    void aDiscardedUnexpectedMessageLetsGoOfItsWholeBufferAtOnce() {
        EmbeddedChannel own = new EmbeddedChannel();
        TestEndpoint endpoint = new TestEndpoint(own, TestEndpoint.amLane(128, 1024));
        EagerCodec c = new EagerCodec(endpoint, worker);
        own.pipeline().addLast(c);
        ByteBuf middle = header(300, 4);
        try {
            own.writeInbound(firstFrame(4, 10, 300, text("0123")));
            assertEquals(MemoryBudget.ENTRY_COST + 10, endpoint.receiveBudget().used(),
                    "charged whole");
            ByteBuf place = c.placePayload(AmIds.EAGER_MIDDLE, middle, 3);
            assertNotNull(place, "its middle fragment goes into the buffer of the whole");
            place.release();
            matcher.close(new ClosedChannelException());
            assertEquals(0, endpoint.receiveBudget().used());
            assertNull(c.placePayload(AmIds.EAGER_MIDDLE, middle, 3), "placed into a buffer let go of");
            own.writeInbound(middleFrame(300, 4, text("456789")));
            assertEquals(0, arriving(c));
        } finally {
            middle.release();
            c.endpointEnded(new ClosedChannelException());
            assertFalse(own.finishAndReleaseAll());
        }
    }

    // ------------------------------------------------------------------ the pipeline

    @Test
    void messagesNoReceiveWantsGoUpThePipelineWhenTheEndpointAsks() {
        EmbeddedChannel piped = new EmbeddedChannel();
        WorkerProtocols w = TestEndpoint.worker(piped, TestEndpoint.settings(MAX, RndvScheme.AUTO,
                EagerProtocols.ALL));
        EagerCodec c = new EagerCodec(new TestEndpoint(piped, TestEndpoint.amLane(128, 1024)).toPipeline(t -> t == 7),
                w);
        piped.pipeline().addLast(c, new TagOrder());
        piped.writeInbound(onlyFrame(7, text("up")));
        TagMessage m1 = piped.readInbound();
        assertEquals("up", m1.content().toString(StandardCharsets.UTF_8));
        m1.release();
        piped.writeInbound(onlyFrame(8, text("queued")));
        assertNull(piped.readInbound(), "tag 8 is not for the pipeline");
        piped.writeInbound(firstFrame(7, 4, 1, text("fr")));
        assertNull(piped.readInbound(), "not before the last fragment");
        piped.writeInbound(middleFrame(1, 2, text("ag")));
        TagMessage m2 = piped.readInbound();
        assertEquals("frag", m2.content().toString(StandardCharsets.UTF_8));
        assertEquals(7, m2.tag());
        m2.release();
        assertEquals(1, w.matcher().unexpectedCount());
        PostedReceives pipedReceives = new PostedReceives(w.matcher(), piped.eventLoop());
        Promise<TagMessage> p = pipedReceives.post(7, -1L);
        assertFalse(p.isDone(), "the piped messages are not also unexpected");
        Promise<TagMessage> posted = pipedReceives.post(7, -1L);
        piped.writeInbound(onlyFrame(7, text("taken")));
        pipedReceives.assertReceived(p, 7, "taken");
        pipedReceives.close();
        assertNull(piped.readInbound(), "a posted receive comes before the pipeline");
        w.matcher().close(new ClosedChannelException());
        assertInstanceOf(ClosedChannelException.class, posted.cause());
        assertFalse(piped.finishAndReleaseAll());
    }

    /**
     * A budget that refuses a message names it: its first fragment's bookkeeping (here, one for the pipeline), or a
     * fragment's bytes, with the message's size and what had arrived. The codec builds these texts only when refused.
     */
    @Test
    void aRefusedChargeNamesTheMessage() {
        long entry = MemoryBudget.ENTRY_COST;
        LimitExceededException bookkeeping = refusedFirst(entry - 1, 0x2b);
        assertEquals("message 2b arriving for the pipeline would hold " + entry + " bytes for one peer: over "
                + "NUCX_RX_EP_BYTES=" + (entry - 1), bookkeeping.getMessage());
        LimitExceededException bytes = refusedFirst(entry + 4, 0x2a);
        assertEquals("message 2a (100 bytes, 0 arrived) would hold " + (entry + 8) + " bytes for one peer: over "
                + "NUCX_RX_EP_BYTES=" + (entry + 4), bytes.getMessage());
    }

    /** An EAGER_FIRST for the pipeline (100 bytes, 8 of them here) on an endpoint whose budget is {@code limit}. */
    private static LimitExceededException refusedFirst(long limit, long msgId) {
        EmbeddedChannel piped = new EmbeddedChannel();
        WorkerProtocols w = TestEndpoint.worker(piped, TestEndpoint.settings(MAX, RndvScheme.AUTO,
                EagerProtocols.ALL));
        EagerCodec c = new EagerCodec(new TestEndpoint(piped, TestEndpoint.amLane(128, 1024)).toPipeline(t -> t == 7)
                .receiveBudget(MemoryBudget.worker("NUCX_RX_WORKER_BYTES", 1 << 20)
                        .endpoint("NUCX_RX_EP_BYTES", limit)), w);
        piped.pipeline().addLast(c, new TagOrder());
        try {
            return assertThrows(LimitExceededException.class,
                    () -> piped.writeInbound(firstFrame(7, 100, msgId, text("12345678"))));
        } finally {
            c.endpointEnded(new ClosedChannelException());
            w.matcher().close(new ClosedChannelException());
            piped.finishAndReleaseAll();
        }
    }
}
