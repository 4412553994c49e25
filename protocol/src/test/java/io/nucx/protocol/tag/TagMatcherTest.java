package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.util.concurrent.Promise;
import io.nucx.transport.testing.RandomCases;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.channels.ClosedChannelException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link TagMatcher} alone, on an embedded channel's loop: posted receives against arrivals, as a protocol drives it
 * (an arriving tag first looks for a posted receive, {@link TagMatcher#takeExpected}, else joins the unexpected queue
 * as a {@link TagArrival}). The arrivals here are whole messages held by a test {@link TagArrival}; what each
 * protocol's arrivals do is tested with its codec.
 */
class TagMatcherTest {

    private final EmbeddedChannel ch = new EmbeddedChannel();
    private final TagMatcher matcher = new TagMatcher(ch.eventLoop());
    private final PostedReceives receives = new PostedReceives(matcher, ch.eventLoop());
    private final List<Whole> arrivals = new ArrayList<>();

    /** A whole message that arrived before any receive wanted it. */
    private static final class Whole extends TagArrival {
        ByteBuf data;
        boolean discarded;

        Whole(long tag, ByteBuf data) {
            super(tag);
            this.data = data;
        }

        @Override
        protected void matched(TagReceive receive) {
            ByteBuf d = data;
            data = null;
            receive.deliver(tag(), d);
        }

        @Override
        protected void discard() {
            discarded = true;
            data.release();
            data = null;
        }
    }

    @AfterEach
    void tearDown() {
        receives.close();
        matcher.close(new ClosedChannelException());
        for (Whole a : arrivals) {
            assertNull(a.data, "every arrival was received or discarded");
        }
        assertFalse(ch.finishAndReleaseAll());
    }

    private static ByteBuf text(String s) {
        return Unpooled.copiedBuffer(s, StandardCharsets.UTF_8);
    }

    /** A message arrives, as a protocol hands it over: to the earliest matching receive, else unexpected. */
    private Whole arrive(long tag, String content) {
        TagReceive r = matcher.takeExpected(tag);
        if (r != null) {
            r.deliver(tag, text(content));
            return null;
        }
        Whole a = new Whole(tag, text(content));
        arrivals.add(a);
        matcher.addUnexpected(a);
        return a;
    }

    // ------------------------------------------------------------------ matching

    @Test
    void exactReceiveTakesOnlyItsTag() {
        Promise<TagMessage> p = receives.post(5, -1L);
        arrive(6, "other");
        assertFalse(p.isDone());
        assertEquals(1, matcher.unexpectedCount());
        arrive(5, "mine");
        receives.assertReceived(p, 5, "mine");
        assertEquals(0, matcher.expectedCount());
        assertEquals(1, matcher.unexpectedCount());
    }

    @Test
    void maskedReceiveComparesOnlyTheMaskedBits() {
        Promise<TagMessage> p = receives.post(0x1200, 0xff00);
        arrive(0x13ab, "wrong high byte");
        assertFalse(p.isDone());
        arrive(0x12ab, "right high byte");
        receives.assertReceived(p, 0x12ab, "right high byte");
    }

    @Test
    void zeroMaskTakesAnyTag() {
        Promise<TagMessage> p = receives.post(0x1234, 0);
        arrive(0xdead_beef_0000_0001L, "anything");
        receives.assertReceived(p, 0xdead_beef_0000_0001L, "anything");
    }

    @Test
    void exactReceivePostedAfterAWildcardDoesNotJumpTheQueue() {
        Promise<TagMessage> wildcard = receives.post(0, 0);
        Promise<TagMessage> exact = receives.post(7, -1L);
        arrive(7, "first");
        receives.assertReceived(wildcard, 7, "first");
        assertFalse(exact.isDone());
        arrive(7, "second");
        receives.assertReceived(exact, 7, "second");
        assertEquals(0, matcher.expectedCount());
    }

    @Test
    void wildcardPostedAfterAnExactReceiveDoesNotJumpTheQueue() {
        Promise<TagMessage> exact = receives.post(7, -1L);
        Promise<TagMessage> wildcard = receives.post(0, 0);
        arrive(7, "first");
        receives.assertReceived(exact, 7, "first");
        assertFalse(wildcard.isDone());
        arrive(7, "second");
        receives.assertReceived(wildcard, 7, "second");
        assertEquals(0, matcher.expectedCount());
    }

    @Test
    void receivesOfOneTagCompleteInPostingOrder() {
        List<Promise<TagMessage>> ps = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            ps.add(i % 2 == 0 ? receives.post(9, -1L) : receives.post(8, ~0xfL));
        }
        for (int i = 0; i < 5; i++) {
            arrive(9, "m" + i);
        }
        for (int i = 0; i < 5; i++) {
            receives.assertReceived(ps.get(i), 9, "m" + i);
        }
    }

    @Test
    void unexpectedMessagesAreTakenInArrivalOrderByExactReceives() {
        arrive(5, "a");
        arrive(6, "b");
        arrive(5, "c");
        assertEquals(3, matcher.unexpectedCount());
        Promise<TagMessage> p1 = receives.post(5, -1L);
        Promise<TagMessage> p2 = receives.post(5, -1L);
        Promise<TagMessage> p3 = receives.post(5, -1L);
        receives.assertReceived(p1, 5, "a");
        receives.assertReceived(p2, 5, "c");
        assertFalse(p3.isDone());
        assertEquals(1, matcher.unexpectedCount());
        assertEquals(1, matcher.expectedCount());
    }

    @Test
    void unexpectedMessagesAreTakenInArrivalOrderByMaskedReceives() {
        arrive(0x11, "a");
        arrive(0x22, "b");
        arrive(0x12, "c");
        Promise<TagMessage> p1 = receives.post(0x10, 0xf0);
        Promise<TagMessage> p2 = receives.post(0x10, 0xf0);
        Promise<TagMessage> p3 = receives.post(0x10, 0xf0);
        receives.assertReceived(p1, 0x11, "a");
        receives.assertReceived(p2, 0x12, "c");
        assertFalse(p3.isDone());
        assertEquals(1, matcher.unexpectedCount());
    }

    @Test
    void messageTakenByAWildcardIsNotTakenAgainByAnExactReceive() {
        arrive(5, "a");
        arrive(6, "b");
        arrive(5, "c");
        receives.assertReceived(receives.post(0, 0), 5, "a");
        receives.assertReceived(receives.post(5, -1L), 5, "c");
        receives.assertReceived(receives.post(0, 0), 6, "b");
        assertEquals(0, matcher.unexpectedCount());
        Promise<TagMessage> none = receives.post(5, -1L);
        assertFalse(none.isDone());
    }

    @Test
    void messageTakenByAnExactReceiveIsNotTakenAgainByAWildcard() {
        arrive(5, "a");
        arrive(6, "b");
        receives.assertReceived(receives.post(5, -1L), 5, "a");
        receives.assertReceived(receives.post(0, 0), 6, "b");
        assertFalse(receives.post(0, 0).isDone());
    }

    @Test
    void cancelledReceiveIsPassedOver() {
        Promise<TagMessage> cancelledExact = receives.post(5, -1L);
        Promise<TagMessage> cancelledWildcard = receives.post(0, 0);
        Promise<TagMessage> live = receives.post(5, -1L);
        assertTrue(cancelledExact.cancel(false));
        assertTrue(cancelledWildcard.cancel(false));
        arrive(5, "x");
        receives.assertReceived(live, 5, "x");
        assertEquals(0, matcher.expectedCount());
        arrive(5, "y");
        assertEquals(1, matcher.unexpectedCount(), "no cancelled receive takes a message");
    }

    /** A receive as the model sees it: what it waits for, and what it must end with. */
    private static final class Expected {
        final long tag;
        final long mask;
        final Promise<TagMessage> promise;
        String content;
        long arrivedTag;

        Expected(long tag, long mask, Promise<TagMessage> promise) {
            this.tag = tag;
            this.mask = mask;
            this.promise = promise;
        }

        boolean matches(long t) {
            return (t & mask) == (tag & mask);
        }
    }

    private record Arrived(long tag, String content) {
    }

    /**
     * Any mix of exact, masked and any-tag receives, cancellations and arrivals ends as a model says: each message
     * goes to the earliest-posted live receive it matches, else waits for the next receive that matches it, in
     * arrival order. Cancelled receives stay counted until passed over, so this also covers the matcher's count of
     * exact receives, which decides whether an arrival looks up its tag at all.
     */
    @Test
    void anyMixOfPostsCancelsAndArrivalsEndsAsTheModelSays() {
        RandomCases.forAll("posts, cancels and arrivals end as the model says", 200, SplittableRandom::split, r -> {
            TagMatcher m = new TagMatcher(ch.eventLoop());
            PostedReceives posted = new PostedReceives(m, ch.eventLoop());
            List<Expected> live = new ArrayList<>();
            List<Expected> all = new ArrayList<>();
            List<Arrived> waiting = new ArrayList<>();
            long[] masks = {-1L, -1L, 0L, 0x2L};
            try {
                for (int op = 0; op < 60; op++) {
                    int kind = r.nextInt(10);
                    long tag = 1 + r.nextInt(3);
                    if (kind < 4) { // post
                        long mask = masks[r.nextInt(masks.length)];
                        Expected posting = new Expected(tag, mask, posted.post(tag, mask));
                        all.add(posting);
                        Arrived a = waiting.stream().filter(w -> posting.matches(w.tag())).findFirst().orElse(null);
                        if (a != null) {
                            waiting.remove(a);
                            posting.content = a.content();
                            posting.arrivedTag = a.tag();
                        } else {
                            live.add(posting);
                        }
                    } else if (kind < 6 && !live.isEmpty()) { // cancel
                        Expected c = live.remove(r.nextInt(live.size()));
                        assertTrue(c.promise.cancel(false));
                    } else { // arrive
                        String content = "m" + op;
                        Expected to = live.stream().filter(e -> e.matches(tag)).findFirst().orElse(null);
                        TagReceive taken = m.takeExpected(tag);
                        if (taken != null) {
                            taken.deliver(tag, text(content));
                        } else {
                            Whole w = new Whole(tag, text(content));
                            arrivals.add(w);
                            m.addUnexpected(w);
                        }
                        if (to != null) {
                            live.remove(to);
                            to.content = content;
                            to.arrivedTag = tag;
                        } else {
                            waiting.add(new Arrived(tag, content));
                        }
                    }
                }
                for (Expected e : all) {
                    if (e.content != null) {
                        posted.assertReceived(e.promise, e.arrivedTag, e.content);
                    } else {
                        assertTrue(!e.promise.isDone() || e.promise.isCancelled(), "a receive the model left waiting");
                    }
                }
                assertEquals(waiting.size(), m.unexpectedCount(), "messages that wait for a receive");
            } finally {
                m.close(new ClosedChannelException());
                posted.close();
            }
        });
    }

    // ------------------------------------------------------------------ withdrawal and close

    @Test
    void aWithdrawnArrivalIsTakenByNoReceiveAndWithdrawingTwiceOrAfterTheMatchDoesNothing() {
        Whole gone = arrive(5, "sender went away");
        arrive(5, "kept");
        Whole wild = arrive(6, "taken");
        assertEquals(3, matcher.unexpectedCount());
        matcher.withdraw(gone);
        assertEquals(2, matcher.unexpectedCount());
        matcher.withdraw(gone);
        assertEquals(2, matcher.unexpectedCount(), "withdrawing twice counts once");
        assertFalse(gone.discarded, "its protocol releases what a withdrawn arrival holds");
        gone.data.release();
        gone.data = null;
        receives.assertReceived(receives.post(0, 0), 5, "kept"); // the wildcard passes over the withdrawn one too
        receives.assertReceived(receives.post(6, -1L), 6, "taken");
        matcher.withdraw(wild);
        assertEquals(0, matcher.unexpectedCount(), "withdrawing one already received does nothing");
        assertFalse(receives.post(5, -1L).isDone());
    }

    @Test
    void closeFailsPostedReceivesDiscardsArrivalsAndFailsLaterPosts() {
        Promise<TagMessage> exact = receives.post(1, -1L);
        Promise<TagMessage> masked = receives.post(0x10, 0xf0);
        Whole unexpected = arrive(9, "held");
        ByteBuf data = unexpected.data;
        ClosedChannelException cause = new ClosedChannelException();
        matcher.close(cause);
        assertSame(cause, exact.cause());
        assertSame(cause, masked.cause());
        assertTrue(unexpected.discarded);
        assertEquals(0, data.refCnt());
        assertEquals(0, matcher.expectedCount());
        assertEquals(0, matcher.unexpectedCount());
        Promise<TagMessage> late = receives.post(9, -1L);
        assertSame(cause, late.cause(), "a receive posted after the close fails with its cause");
        Whole afterClose = new Whole(9, text("late"));
        arrivals.add(afterClose);
        matcher.addUnexpected(afterClose);
        assertTrue(afterClose.discarded, "an arrival after the close is discarded at once");
        matcher.withdraw(afterClose); // no-op after the close
        matcher.close(new IOException("twice")); // idempotent
        assertSame(cause, receives.post(1, -1L).cause());
    }

    @Test
    void closeWithoutACauseFailsWithClosedChannelException() {
        Promise<TagMessage> p = receives.post(1, -1L);
        matcher.close(null);
        assertInstanceOf(ClosedChannelException.class, p.cause());
    }

    // ------------------------------------------------------------------ a receive's buffer

    @Test
    void receiveIntoUserBufferAppendsAfterItsContent() {
        ByteBuf into = Unpooled.buffer(16).writeBytes("ab".getBytes(StandardCharsets.US_ASCII));
        Promise<TagMessage> p = receives.post(1, -1L, into);
        arrive(1, "cdef");
        receives.assertReceived(p, 1, "cdef");
        assertEquals("abcdef", into.toString(StandardCharsets.US_ASCII));
        assertFalse(p.cancel(false));
        into.release();
    }

    @Test
    void anUnexpectedMessageTooLongForTheUserBufferFailsWithTruncationAndIsReleased() {
        Whole a = arrive(1, "four");
        ByteBuf payload = a.data;
        ByteBuf into = Unpooled.buffer(3, 3);
        Promise<TagMessage> p = receives.post(1, -1L, into);
        MessageTruncatedException e = assertInstanceOf(MessageTruncatedException.class, p.cause());
        assertEquals(1, e.tag());
        assertEquals(4, e.length());
        assertEquals(3, e.capacity());
        assertTrue(e.getMessage().contains("4 bytes; the receive buffer has room for 3"), e.getMessage());
        assertEquals(0, payload.refCnt());
        assertEquals(0, into.writerIndex(), "nothing written into the user's buffer");
        into.release();
    }

    @Test
    void aReceiveCancelledAfterTheMatchGetsNothingAndItsBufferIsLeftAlone() {
        ByteBuf into = Unpooled.buffer(8);
        Promise<TagMessage> p = ch.eventLoop().newPromise();
        TagReceive r = new TagReceive(1, -1L, into, p);
        assertTrue(p.cancel(false)); // from another thread, between the match and the copy
        ByteBuf data = text("late");
        r.deliver(1, data);
        assertTrue(p.isCancelled());
        assertEquals(0, data.refCnt());
        assertEquals(0, into.writerIndex());
        assertFalse(r.claim(), "a cancelled receive cannot be claimed for data");
        into.release();
    }
    // ------------------------------------------------------------------ posts from a receive's own handler

    /** A reusable receive that reposts itself from its handler, as a receive loop does, and records how deep it ran. */
    private final class Reposting implements TagReceive.Handler {
        final List<String> got = new ArrayList<>();
        final TagReceive receive = TagReceive.reusable(3, -1L, this);
        int depth;
        int maxDepth;

        @Override
        public void received(long tag, ByteBuf data) {
            depth++;
            maxDepth = Math.max(maxDepth, depth);
            got.add(data.toString(StandardCharsets.UTF_8));
            data.release();
            matcher.post(receive);
            depth--;
        }

        @Override
        public void failed(Throwable cause) {
        }
    }

    /**
     * 20,000 messages wait when a reusable receive that reposts itself from its handler is first posted: each is
     * matched by the first post's loop, one handler call at a time, in arrival order. Nested, one call per message,
     * they overflowed the loop's stack.
     */
    @Test
    void aBacklogTakenByAReceiveThatRepostsItselfIsTakenInALoopNotNested() {
        int backlog = 20_000;
        for (int i = 0; i < backlog; i++) {
            arrive(3, "m" + i);
        }
        Reposting loop = new Reposting();
        matcher.post(loop.receive);
        assertEquals(backlog, loop.got.size(), "every waiting message taken");
        assertEquals(1, loop.maxDepth, "one handler call at a time");
        for (int i = 0; i < backlog; i++) {
            assertEquals("m" + i, loop.got.get(i));
        }
        assertEquals(0, matcher.unexpectedCount());
        assertEquals(1, matcher.expectedCount(), "posted again for the next message");
        arrive(3, "next");
        assertEquals("next", loop.got.get(backlog));
    }

    /**
     * Receives posted from a handler are matched when it returns, in the order they were posted; an arrival meanwhile
     * goes to a receive posted before them.
     */
    @Test
    void receivesPostedFromAHandlerAreMatchedWhenItReturnsInTheirOrder() {
        arrive(2, "b1");
        arrive(2, "b2");
        arrive(1, "a");
        List<Promise<TagMessage>> posted = new ArrayList<>();
        Promise<TagMessage> earlier = receives.post(4, -1L);
        Promise<TagMessage> first = ch.eventLoop().newPromise();
        first.addListener(f -> {
            posted.add(receives.post(2, -1L));
            posted.add(receives.post(0, 0));
            assertFalse(posted.get(0).isDone(), "matched when this listener returns");
            arrive(4, "meanwhile");
            assertTrue(earlier.isDone(), "an arrival meanwhile goes to the receive posted before");
        });
        matcher.post(new TagReceive(1, -1L, null, first));
        receives.assertReceived(first, 1, "a");
        receives.assertReceived(earlier, 4, "meanwhile");
        receives.assertReceived(posted.get(0), 2, "b1");
        receives.assertReceived(posted.get(1), 2, "b2");
    }

    /** A handler that throws: the receives it posted before are still matched, and its exception reaches the post. */
    @Test
    void aHandlerThatThrowsLosesNoReceivePostedBeforeAndItsExceptionReachesThePost() {
        arrive(1, "a");
        arrive(2, "b");
        Promise<TagMessage> second = ch.eventLoop().newPromise();
        TagReceive throwing = TagReceive.reusable(1, -1L, new TagReceive.Handler() {
            @Override
            public void received(long tag, ByteBuf data) {
                data.release();
                matcher.post(new TagReceive(2, -1L, null, second));
                throw new IllegalArgumentException("the handler's own fault");
            }

            @Override
            public void failed(Throwable cause) {
            }
        });
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> matcher.post(throwing));
        assertEquals("the handler's own fault", e.getMessage());
        receives.assertReceived(second, 2, "b");
        arrive(1, "c");
        assertEquals(1, matcher.unexpectedCount(), "the throwing receive was not posted again");
        Promise<TagMessage> third = receives.post(1, -1L);
        receives.assertReceived(third, 1, "c");
    }
    /** A receive posted from a handler and cancelled before its turn takes nothing: the message waits for the next. */
    @Test
    void aReceiveCancelledBeforeItsTurnTakesNothing() {
        arrive(1, "a");
        arrive(2, "b");
        List<Promise<TagMessage>> cancelled = new ArrayList<>();
        Promise<TagMessage> first = ch.eventLoop().newPromise();
        first.addListener(f -> {
            Promise<TagMessage> p = receives.post(2, -1L);
            cancelled.add(p);
            assertTrue(p.cancel(false));
        });
        matcher.post(new TagReceive(1, -1L, null, first));
        receives.assertReceived(first, 1, "a");
        assertTrue(cancelled.get(0).isCancelled());
        assertEquals(1, matcher.unexpectedCount(), "the message is still waiting");
        assertEquals(0, matcher.expectedCount());
        receives.assertReceived(receives.post(2, -1L), 2, "b");
    }
}
