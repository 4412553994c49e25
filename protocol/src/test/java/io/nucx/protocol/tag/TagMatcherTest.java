package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.util.concurrent.Promise;
import io.nucx.protocol.ProtocolException;
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
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link TagMatcher} driven directly on an embedded channel's event loop (which is always "in" its loop). */
class TagMatcherTest {

    private static final long MAX = 1 << 20;

    private EmbeddedChannel ch;
    private EmbeddedChannel other;
    private TagMatcher matcher;
    private final List<TagMessage> received = new ArrayList<>();

    @BeforeEach
    void setUp() {
        ch = new EmbeddedChannel();
        other = new EmbeddedChannel();
        matcher = new TagMatcher(ch.eventLoop(), ByteBufAllocator.DEFAULT, MAX, (c, t) -> false);
    }

    @AfterEach
    void tearDown() {
        received.forEach(TagMessage::release);
        matcher.close(new ClosedChannelException());
        assertFalse(ch.finishAndReleaseAll());
        assertFalse(other.finishAndReleaseAll());
    }

    private static ByteBuf text(String s) {
        return Unpooled.copiedBuffer(s, StandardCharsets.UTF_8);
    }

    private Promise<TagMessage> post(long tag, long mask) {
        Promise<TagMessage> p = ch.eventLoop().newPromise();
        matcher.post(tag, mask, null, p);
        return p;
    }

    /** The message a receive completed with, kept for release after the test. */
    private TagMessage message(Promise<TagMessage> p) {
        assertTrue(p.isDone(), "receive not complete");
        assertTrue(p.isSuccess(), () -> "receive failed: " + p.cause());
        TagMessage m = p.getNow();
        received.add(m);
        return m;
    }

    private void assertReceived(Promise<TagMessage> p, long tag, String content) {
        TagMessage m = message(p);
        assertEquals(tag, m.tag(), "tag");
        assertEquals(content, m.content().toString(StandardCharsets.UTF_8), "content");
    }

    private void only(long tag, String content) {
        matcher.onEagerOnly(ch, tag, text(content));
    }

    // ------------------------------------------------------------------ matching

    @Test
    void exactReceiveTakesOnlyItsTag() {
        Promise<TagMessage> p = post(5, -1L);
        only(6, "other");
        assertFalse(p.isDone());
        assertEquals(1, matcher.unexpectedCount());
        only(5, "mine");
        assertReceived(p, 5, "mine");
        assertEquals(0, matcher.expectedCount());
        assertEquals(1, matcher.unexpectedCount());
    }

    @Test
    void maskedReceiveComparesOnlyTheMaskedBits() {
        Promise<TagMessage> p = post(0x1200, 0xff00);
        only(0x13ab, "wrong high byte");
        assertFalse(p.isDone());
        only(0x12ab, "right high byte");
        assertReceived(p, 0x12ab, "right high byte");
    }

    @Test
    void zeroMaskTakesAnyTag() {
        Promise<TagMessage> p = post(0x1234, 0);
        only(0xdead_beef_0000_0001L, "anything");
        assertReceived(p, 0xdead_beef_0000_0001L, "anything");
    }

    @Test
    void exactReceivePostedAfterAWildcardDoesNotJumpTheQueue() {
        Promise<TagMessage> wildcard = post(0, 0);
        Promise<TagMessage> exact = post(7, -1L);
        only(7, "first");
        assertReceived(wildcard, 7, "first");
        assertFalse(exact.isDone());
        only(7, "second");
        assertReceived(exact, 7, "second");
        assertEquals(0, matcher.expectedCount());
    }

    @Test
    void wildcardPostedAfterAnExactReceiveDoesNotJumpTheQueue() {
        Promise<TagMessage> exact = post(7, -1L);
        Promise<TagMessage> wildcard = post(0, 0);
        only(7, "first");
        assertReceived(exact, 7, "first");
        assertFalse(wildcard.isDone());
        only(7, "second");
        assertReceived(wildcard, 7, "second");
        assertEquals(0, matcher.expectedCount());
    }

    @Test
    void receivesOfOneTagCompleteInPostingOrder() {
        List<Promise<TagMessage>> ps = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            ps.add(i % 2 == 0 ? post(9, -1L) : post(8, ~0xfL));
        }
        for (int i = 0; i < 5; i++) {
            only(9, "m" + i);
        }
        for (int i = 0; i < 5; i++) {
            assertReceived(ps.get(i), 9, "m" + i);
        }
    }

    @Test
    void unexpectedMessagesAreTakenInArrivalOrderByExactReceives() {
        only(5, "a");
        only(6, "b");
        only(5, "c");
        assertEquals(3, matcher.unexpectedCount());
        Promise<TagMessage> p1 = post(5, -1L);
        Promise<TagMessage> p2 = post(5, -1L);
        Promise<TagMessage> p3 = post(5, -1L);
        assertReceived(p1, 5, "a");
        assertReceived(p2, 5, "c");
        assertFalse(p3.isDone());
        assertEquals(1, matcher.unexpectedCount());
        assertEquals(1, matcher.expectedCount());
    }

    @Test
    void unexpectedMessagesAreTakenInArrivalOrderByMaskedReceives() {
        only(0x11, "a");
        only(0x22, "b");
        only(0x12, "c");
        Promise<TagMessage> p1 = post(0x10, 0xf0);
        Promise<TagMessage> p2 = post(0x10, 0xf0);
        Promise<TagMessage> p3 = post(0x10, 0xf0);
        assertReceived(p1, 0x11, "a");
        assertReceived(p2, 0x12, "c");
        assertFalse(p3.isDone());
        assertEquals(1, matcher.unexpectedCount());
    }

    @Test
    void messageTakenByAWildcardIsNotTakenAgainByAnExactReceive() {
        only(5, "a");
        only(6, "b");
        only(5, "c");
        assertReceived(post(0, 0), 5, "a");
        assertReceived(post(5, -1L), 5, "c");
        assertReceived(post(0, 0), 6, "b");
        assertEquals(0, matcher.unexpectedCount());
        Promise<TagMessage> none = post(5, -1L);
        assertFalse(none.isDone());
    }

    @Test
    void messageTakenByAnExactReceiveIsNotTakenAgainByAWildcard() {
        only(5, "a");
        only(6, "b");
        assertReceived(post(5, -1L), 5, "a");
        assertReceived(post(0, 0), 6, "b");
        assertFalse(post(0, 0).isDone());
    }

    @Test
    void cancelledReceiveIsPassedOver() {
        Promise<TagMessage> cancelledExact = post(5, -1L);
        Promise<TagMessage> cancelledWildcard = post(0, 0);
        Promise<TagMessage> live = post(5, -1L);
        assertTrue(cancelledExact.cancel(false));
        assertTrue(cancelledWildcard.cancel(false));
        only(5, "x");
        assertReceived(live, 5, "x");
        assertEquals(0, matcher.expectedCount());
        only(5, "y");
        assertEquals(1, matcher.unexpectedCount(), "no cancelled receive takes a message");
    }

    @Test
    void receiveIntoUserBufferAppendsAfterItsContent() {
        ByteBuf into = Unpooled.buffer(16).writeBytes("ab".getBytes(StandardCharsets.US_ASCII));
        Promise<TagMessage> p = ch.eventLoop().newPromise();
        matcher.post(1, -1L, into, p);
        only(1, "cdef");
        assertReceived(p, 1, "cdef");
        assertEquals("abcdef", into.toString(StandardCharsets.US_ASCII));
        into.release();
    }

    @Test
    void eagerOnlyIntoTooSmallBufferFailsWithTruncationAndReleasesThePayload() {
        ByteBuf into = Unpooled.buffer(3);
        Promise<TagMessage> p = ch.eventLoop().newPromise();
        matcher.post(1, -1L, into, p);
        ByteBuf payload = text("four");
        matcher.onEagerOnly(ch, 1, payload);
        MessageTruncatedException e = assertInstanceOf(MessageTruncatedException.class, p.cause());
        assertEquals(4, e.length());
        assertEquals(3, e.capacity());
        assertEquals(0, payload.refCnt());
        assertEquals(0, into.writerIndex(), "nothing written into the user's buffer");
        into.release();
    }

    // ------------------------------------------------------------------ fragments

    private static final String WHOLE = "0123456789";

    /** FIRST carries bytes [0,4), MIDDLEs [4,7) and [7,10). */
    private void first(long tag, long msgId) {
        matcher.onEagerFirst(ch, tag, WHOLE.length(), msgId, text(WHOLE.substring(0, 4)));
    }

    private void middle(long msgId, int from, int to) {
        matcher.onEagerMiddle(ch, msgId, from, text(WHOLE.substring(from, to)));
    }

    @Test
    void fragmentsReassembleIntoAReceivePostedBeforeTheFirst() {
        Promise<TagMessage> p = post(3, -1L);
        first(3, 100);
        middle(100, 4, 7);
        assertFalse(p.isDone());
        assertEquals(1, matcher.reassemblyCount());
        middle(100, 7, 10);
        assertReceived(p, 3, WHOLE);
        assertEquals(0, matcher.reassemblyCount());
        assertEquals(0, matcher.unexpectedCount());
    }

    @Test
    void receivePostedBetweenFragmentsTakesOverTheReassembly() {
        first(3, 100);
        assertEquals(1, matcher.unexpectedCount());
        middle(100, 4, 7);
        Promise<TagMessage> p = post(3, -1L);
        assertFalse(p.isDone());
        assertEquals(0, matcher.unexpectedCount());
        middle(100, 7, 10);
        assertReceived(p, 3, WHOLE);
        assertEquals(0, matcher.reassemblyCount());
    }

    @Test
    void maskedReceivePostedBetweenFragmentsTakesOverTheReassembly() {
        first(0x31, 100);
        Promise<TagMessage> p = post(0x30, 0xf0);
        middle(100, 4, 7);
        middle(100, 7, 10);
        assertReceived(p, 0x31, WHOLE);
    }

    @Test
    void receivePostedAfterTheLastFragmentTakesTheWholeMessage() {
        first(3, 100);
        middle(100, 4, 7);
        middle(100, 7, 10);
        assertEquals(0, matcher.reassemblyCount());
        assertEquals(1, matcher.unexpectedCount());
        assertReceived(post(3, -1L), 3, WHOLE);
        assertEquals(0, matcher.unexpectedCount());
    }

    @Test
    void middleFragmentsMayArriveOutOfOffsetOrder() {
        Promise<TagMessage> p = post(3, -1L);
        first(3, 100);
        middle(100, 7, 10);
        middle(100, 4, 7);
        assertReceived(p, 3, WHOLE);
    }

    @Test
    void interleavedFragmentsOfTwoMessagesReassembleSeparately() {
        Promise<TagMessage> pa = post(1, -1L);
        matcher.onEagerFirst(ch, 1, 6, 11, text("aa"));
        matcher.onEagerFirst(ch, 2, 6, 22, text("bb"));
        matcher.onEagerMiddle(ch, 22, 2, text("BB"));
        matcher.onEagerMiddle(ch, 11, 2, text("AA"));
        Promise<TagMessage> pb = post(2, -1L);
        matcher.onEagerMiddle(ch, 11, 4, text("xx"));
        matcher.onEagerMiddle(ch, 22, 4, text("yy"));
        assertReceived(pa, 1, "aaAAxx");
        assertReceived(pb, 2, "bbBByy");
        assertEquals(0, matcher.reassemblyCount());
    }

    @Test
    void fragmentsReassembleStraightIntoAUserBuffer() {
        ByteBuf into = Unpooled.buffer(32).writeByte('>');
        Promise<TagMessage> p = ch.eventLoop().newPromise();
        matcher.post(3, -1L, into, p);
        first(3, 100);
        middle(100, 4, 7);
        middle(100, 7, 10);
        assertReceived(p, 3, WHOLE);
        assertEquals(">" + WHOLE, into.toString(StandardCharsets.US_ASCII));
        into.release();
    }

    @Test
    void fragmentedMessageTooLargeForTheUserBufferFailsAndTheRestIsDropped() {
        ByteBuf into = Unpooled.buffer(8);
        Promise<TagMessage> p = ch.eventLoop().newPromise();
        matcher.post(3, -1L, into, p);
        ByteBuf firstPayload = text(WHOLE.substring(0, 4));
        matcher.onEagerFirst(ch, 3, WHOLE.length(), 100, firstPayload);
        MessageTruncatedException e = assertInstanceOf(MessageTruncatedException.class, p.cause());
        assertEquals(3, e.tag());
        assertEquals(WHOLE.length(), e.length());
        assertEquals(8, e.capacity());
        assertEquals(0, firstPayload.refCnt());
        ByteBuf last = text(WHOLE.substring(7));
        middle(100, 4, 7);
        matcher.onEagerMiddle(ch, 100, 7, last);
        assertEquals(0, last.refCnt());
        assertEquals(0, matcher.reassemblyCount());
        assertEquals(0, matcher.unexpectedCount(), "the dropped message is not kept as unexpected");
        assertEquals(0, into.writerIndex());
        Promise<TagMessage> next = post(3, -1L);
        only(3, "next");
        assertReceived(next, 3, "next");
        into.release();
    }

    @Test
    void receiveIntoTooSmallBufferPostedBetweenFragmentsFailsWhenTheMessageCompletes() {
        first(3, 100);
        ByteBuf into = Unpooled.buffer(8);
        Promise<TagMessage> p = ch.eventLoop().newPromise();
        matcher.post(3, -1L, into, p);
        middle(100, 4, 7);
        assertFalse(p.isDone());
        middle(100, 7, 10);
        assertInstanceOf(MessageTruncatedException.class, p.cause());
        assertEquals(0, matcher.reassemblyCount());
        into.release();
    }

    @Test
    void singleFragmentFirstCompletesAtOnce() {
        Promise<TagMessage> p = post(3, -1L);
        matcher.onEagerFirst(ch, 3, 4, 100, text("1234"));
        assertReceived(p, 3, "1234");
        assertEquals(0, matcher.reassemblyCount());
    }

    @Test
    void firstAnnouncingMoreThanTheMaximumIsAProtocolErrorAndItsPayloadIsReleased() {
        ByteBuf payload = text("x");
        ProtocolException e = assertThrows(ProtocolException.class,
                () -> matcher.onEagerFirst(ch, 3, MAX + 1, 100, payload));
        assertTrue(e.getMessage().contains(String.valueOf(MAX + 1)), e.getMessage());
        assertEquals(0, payload.refCnt());
        assertEquals(0, matcher.reassemblyCount());
    }

    @Test
    void firstAnnouncingNegativeLengthIsAProtocolError() {
        ByteBuf payload = text("x");
        assertThrows(ProtocolException.class, () -> matcher.onEagerFirst(ch, 3, -1, 100, payload));
        assertEquals(0, payload.refCnt());
    }

    @Test
    void firstCarryingMoreThanItAnnouncesIsAProtocolError() {
        ByteBuf payload = text("12345");
        assertThrows(ProtocolException.class, () -> matcher.onEagerFirst(ch, 3, 4, 100, payload));
        assertEquals(0, payload.refCnt());
        assertEquals(0, matcher.unexpectedCount());
    }

    @Test
    void messageIdStartedTwiceIsAProtocolError() {
        first(3, 100);
        ByteBuf again = text("0123");
        assertThrows(ProtocolException.class, () -> matcher.onEagerFirst(ch, 3, 10, 100, again));
        assertEquals(0, again.refCnt());
        Promise<TagMessage> p = post(3, -1L);
        middle(100, 4, 7);
        middle(100, 7, 10);
        assertReceived(p, 3, WHOLE);
    }

    @Test
    void middleOfUnknownMessageIsAProtocolErrorAndItsPayloadIsReleased() {
        ByteBuf payload = text("zz");
        ProtocolException e = assertThrows(ProtocolException.class, () -> matcher.onEagerMiddle(ch, 0xabc, 0, payload));
        assertTrue(e.getMessage().contains("abc"), e.getMessage());
        assertEquals(0, payload.refCnt());
    }

    @Test
    void middleFromAnotherSourceIsAProtocolError() {
        first(3, 100);
        ByteBuf payload = text("456");
        assertThrows(ProtocolException.class, () -> matcher.onEagerMiddle(other, 100, 4, payload));
        assertEquals(0, payload.refCnt());
        assertEquals(1, matcher.reassemblyCount());
    }

    @Test
    void middleOutsideTheMessageIsAProtocolError() {
        first(3, 100);
        ByteBuf payload = text("789x");
        assertThrows(ProtocolException.class, () -> matcher.onEagerMiddle(ch, 100, 7, payload));
        assertEquals(0, payload.refCnt());
    }

    // ------------------------------------------------------------------ failures

    @Test
    void sourceClosingFailsAReceiveWaitingOnItsPartialMessage() {
        Promise<TagMessage> p = post(3, -1L);
        first(3, 100);
        middle(100, 4, 7);
        IOException cause = new IOException("lane gone");
        matcher.onSourceClosed(ch, cause);
        IOException e = assertInstanceOf(IOException.class, p.cause());
        assertSame(cause, e.getCause());
        assertEquals(0, matcher.reassemblyCount());
        ByteBuf late = text("789");
        assertThrows(ProtocolException.class, () -> matcher.onEagerMiddle(ch, 100, 7, late));
        assertEquals(0, late.refCnt());
    }

    @Test
    void sourceClosingDropsItsPartialUnexpectedMessageButNotOthers() {
        first(3, 100);
        matcher.onEagerFirst(other, 3, 4, 200, text("ab"));
        assertEquals(2, matcher.unexpectedCount());
        matcher.onSourceClosed(ch, new IOException("gone"));
        assertEquals(1, matcher.unexpectedCount());
        assertEquals(1, matcher.reassemblyCount());
        Promise<TagMessage> p = post(3, -1L);
        matcher.onEagerMiddle(other, 200, 2, text("cd"));
        assertReceived(p, 3, "abcd");
    }

    @Test
    void sourceClosingLeavesCompleteUnexpectedMessages() {
        only(4, "kept");
        matcher.onSourceClosed(ch, new IOException("gone"));
        assertReceived(post(4, -1L), 4, "kept");
    }

    @Test
    void closeFailsPostedReceivesAndReleasesHeldMessages() {
        Promise<TagMessage> exact = post(1, -1L);
        Promise<TagMessage> masked = post(0x10, 0xf0);
        Promise<TagMessage> partial = post(3, -1L);
        first(3, 100);
        ByteBuf unexpected = text("held");
        matcher.onEagerOnly(ch, 9, unexpected);
        first(4, 200); // unexpected and still arriving
        ClosedChannelException cause = new ClosedChannelException();
        matcher.close(cause);
        assertSame(cause, exact.cause());
        assertSame(cause, masked.cause());
        assertSame(cause, partial.cause());
        assertEquals(0, unexpected.refCnt());
        assertEquals(0, matcher.expectedCount());
        assertEquals(0, matcher.unexpectedCount());
        assertEquals(0, matcher.reassemblyCount());
        Promise<TagMessage> late = post(9, -1L);
        assertInstanceOf(ClosedChannelException.class, late.cause());
        matcher.close(new IOException("twice")); // idempotent
    }

    @Test
    void messagesNoReceiveWantsGoUpThePipelineWhenTheEndpointAsks() {
        TagMatcher piped = new TagMatcher(ch.eventLoop(), ByteBufAllocator.DEFAULT, MAX, (c, t) -> t == 7);
        piped.onEagerOnly(ch, 7, text("up"));
        TagMessage m1 = ch.readInbound();
        received.add(m1);
        assertEquals("up", m1.content().toString(StandardCharsets.UTF_8));
        piped.onEagerOnly(ch, 8, text("queued"));
        assertNull(ch.readInbound(), "tag 8 is not for the pipeline");
        piped.onEagerFirst(ch, 7, 4, 1, text("fr"));
        assertNull(ch.readInbound(), "not before the last fragment");
        piped.onEagerMiddle(ch, 1, 2, text("ag"));
        TagMessage m2 = ch.readInbound();
        received.add(m2);
        assertEquals("frag", m2.content().toString(StandardCharsets.UTF_8));
        assertEquals(7, m2.tag());
        assertEquals(1, piped.unexpectedCount());
        Promise<TagMessage> p = ch.eventLoop().newPromise();
        piped.post(7, -1L, null, p);
        assertFalse(p.isDone(), "the piped messages are not also unexpected");
        piped.close(new ClosedChannelException());
        assertInstanceOf(ClosedChannelException.class, p.cause());
    }

    @Test
    void receivedMessageCarriesTheArrivedPayloadAndReleasingItReleasesThePayload() {
        ByteBuf payload = text("abc");
        Promise<TagMessage> p = post(1, -1L);
        matcher.onEagerOnly(ch, 1, payload);
        TagMessage m = message(p);
        assertTrue(ByteBufUtil.equals(Unpooled.wrappedBuffer("abc".getBytes(StandardCharsets.UTF_8)), m.content()));
        m.release();
        received.remove(m);
        assertEquals(0, payload.refCnt(), "the receiver owns the payload through the message");
    }
}
