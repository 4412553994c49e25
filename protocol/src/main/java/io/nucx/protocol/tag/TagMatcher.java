package io.nucx.protocol.tag;

import io.netty.util.collection.LongObjectHashMap;
import io.netty.util.collection.LongObjectMap;
import io.netty.util.concurrent.EventExecutor;

import java.nio.channels.ClosedChannelException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

/**
 * A worker's tag matching (UCX's {@code ucp_tag_match_t}): it only matches, posted receives against arrivals of
 * every endpoint; reassembly and rendezvous stages live with the protocol that made each {@link TagArrival}.
 * Confined to the worker's event loop.
 *
 * <ul>
 *   <li>Expected (posted receives): full-mask receives in a hash of per-tag queues, masked ones in one wildcard
 *       queue. Every receive gets a sequence number; an arriving tag takes the earliest-posted match across both.</li>
 *   <li>Unexpected (arrived, not yet received): per-tag queues plus one queue in arrival order; a receive takes the
 *       earliest arrival that matches. An entry taken through one queue is marked consumed and dropped lazily from
 *       the other.</li>
 * </ul>
 * Match rule: {@code ((tag ^ expected) & mask) == 0}.
 *
 * <p>A receive posted and matched again and again allocates nothing here: the per-tag queues are keyed by the
 * primitive tag and an emptied queue stays for the next receive of its tag while there are at most
 * {@link #KEPT_EMPTY_QUEUES} queues (beyond that, emptied ones are dropped, so many one-off tags cannot pile up).
 */
public final class TagMatcher {

    /** Per-tag queues kept when empty, so a tag posted again and again does not allocate a queue each time. */
    static final int KEPT_EMPTY_QUEUES = 64;

    private final EventExecutor loop;
    private final LongObjectMap<ArrayDeque<TagReceive>> exactExpected = new LongObjectHashMap<>();
    private final ArrayDeque<TagReceive> wildcardExpected = new ArrayDeque<>();
    private final LongObjectMap<ArrayDeque<TagArrival>> unexpectedByTag = new LongObjectHashMap<>();
    private final ArrayDeque<TagArrival> unexpectedAll = new ArrayDeque<>();
    private long nextSn;
    private int expectedCount;
    private int unexpectedCount;
    private Throwable closed;
    /** Inside {@link #post}'s matching; receives posted meanwhile wait here for its loop, in order. */
    private boolean posting;
    private final ArrayDeque<TagReceive> postedMeanwhile = new ArrayDeque<>(4);

    public TagMatcher(EventExecutor loop) {
        this.loop = loop;
    }

    /** Posted receives not yet matched (cancelled ones may still be counted until they are passed over). */
    public int expectedCount() {
        return expectedCount;
    }

    /** Arrivals not yet received. */
    public int unexpectedCount() {
        return unexpectedCount;
    }

    /**
     * Posts a receive: the earliest matching arrival is handed to it at once, otherwise it waits. After
     * {@link #close} it fails with the close's cause.
     *
     * <p>A receive posted while another post is handing it an arrival (from a receive's own handler, the usual way to
     * keep one reusable receive posted) is matched when that handler returns, by the outer post's loop. A backlog of
     * waiting arrivals is so taken in a loop, not one nested call per arrival: 20,000 of them overflowed the loop's
     * stack. Posts keep their order; arrivals meanwhile go to receives posted before, or wait.
     *
     * @throws ReceivePostedAlreadyException if {@code r} is a {@linkplain TagReceive#reusable reusable} receive posted
     *                                       already (the first post stands)
     */
    public void post(TagReceive r) {
        assert loop.inEventLoop();
        if (!r.markPosted()) {
            throw new ReceivePostedAlreadyException("receive for tag 0x" + Long.toHexString(r.tag())
                    + " is posted already");
        }
        if (posting) {
            postedMeanwhile.add(r);
            return;
        }
        posting = true;
        RuntimeException thrown = null;
        try {
            for (TagReceive next = r; next != null; next = postedMeanwhile.poll()) {
                try {
                    match(next);
                } catch (RuntimeException e) { // a handler's: the receives posted after it are still matched
                    if (thrown == null) {
                        thrown = e;
                    } else {
                        thrown.addSuppressed(e);
                    }
                }
            }
        } finally {
            posting = false;
        }
        if (thrown != null) {
            throw thrown;
        }
    }

    /** Hands {@code r} the earliest matching arrival, or queues it. */
    private void match(TagReceive r) {
        if (closed != null) {
            r.fail(closed);
            return;
        }
        if (r.isDone()) {
            return; // cancelled while it waited for its turn (posted from a handler)
        }
        TagArrival a = takeUnexpected(r.tag(), r.mask());
        if (a != null) {
            a.matched(r);
            return;
        }
        r.sn = nextSn++;
        if (r.mask() == -1L) {
            ArrayDeque<TagReceive> q = exactExpected.get(r.tag());
            if (q == null) {
                q = new ArrayDeque<>(4);
                exactExpected.put(r.tag(), q);
            }
            q.add(r);
        } else {
            wildcardExpected.add(r);
        }
        expectedCount++;
    }

    /** The earliest-posted waiting receive matching {@code tag}, removed from its queue; null if none. */
    public TagReceive takeExpected(long tag) {
        assert loop.inEventLoop();
        if (expectedCount == 0) {
            return null;
        }
        // Every waiting receive is counted, exact or wildcard: with none of them exact, the map is not asked (a
        // server that posts one receive for any tag matches each message without a hash lookup).
        ArrayDeque<TagReceive> exact = expectedCount > wildcardExpected.size() ? exactExpected.get(tag) : null;
        TagReceive e = null;
        if (exact != null) {
            while ((e = exact.peek()) != null && e.isDone()) {
                exact.poll(); // cancelled while waiting
                expectedCount--;
            }
        }
        TagReceive w = earliestWildcard(tag);
        TagReceive chosen;
        if (e != null && (w == null || e.sn < w.sn)) {
            exact.poll();
            chosen = e;
        } else {
            chosen = w;
            if (w != null) {
                removeWildcard(w);
            }
        }
        if (exact != null && exact.isEmpty()) {
            dropIfMany(exactExpected, tag);
        }
        if (chosen != null) {
            expectedCount--;
        }
        return chosen;
    }

    /**
     * The earliest-posted masked receive matching {@code tag}, left in its queue; cancelled ones before it are dropped.
     * The receive at the head is checked without an iterator (the common case: one wildcard receive posted at a time).
     */
    private TagReceive earliestWildcard(long tag) {
        TagReceive head;
        while ((head = wildcardExpected.peek()) != null && head.isDone()) {
            wildcardExpected.poll();
            expectedCount--;
        }
        if (head == null || head.matches(tag)) {
            return head;
        }
        for (Iterator<TagReceive> it = wildcardExpected.iterator(); it.hasNext(); ) {
            TagReceive r = it.next();
            if (r.isDone()) {
                it.remove();
                expectedCount--;
            } else if (r.matches(tag)) {
                return r;
            }
        }
        return null;
    }

    private void removeWildcard(TagReceive r) {
        if (wildcardExpected.peek() == r) {
            wildcardExpected.poll();
        } else {
            wildcardExpected.removeFirstOccurrence(r);
        }
    }

    /** An emptied per-tag queue is kept for the tag's next use, unless there are many. */
    private static void dropIfMany(LongObjectMap<?> queues, long tag) {
        if (queues.size() > KEPT_EMPTY_QUEUES) {
            queues.remove(tag);
        }
    }

    /** Queues an arrival no receive wanted; a later {@link #post} takes it. */
    public void addUnexpected(TagArrival a) {
        assert loop.inEventLoop();
        if (closed != null) {
            a.discard();
            return;
        }
        unexpectedAll.add(a);
        ArrayDeque<TagArrival> q = unexpectedByTag.get(a.tag());
        if (q == null) {
            q = new ArrayDeque<>(4);
            unexpectedByTag.put(a.tag(), q);
        }
        q.add(a);
        unexpectedCount++;
    }

    /** Takes {@code a} out of the unexpected queue without a receive (its sender went away); no-op if taken. */
    public void withdraw(TagArrival a) {
        assert loop.inEventLoop();
        if (!a.consumed && closed == null) {
            consume(a);
        }
    }

    private TagArrival takeUnexpected(long tag, long mask) {
        if (unexpectedCount == 0) {
            return null;
        }
        if (mask == -1L) {
            ArrayDeque<TagArrival> q = unexpectedByTag.get(tag);
            if (q == null) {
                return null;
            }
            TagArrival a;
            while ((a = q.poll()) != null && a.consumed) {
                // dropped lazily: already taken through the arrival-order queue, or withdrawn
            }
            if (q.isEmpty()) {
                dropIfMany(unexpectedByTag, tag);
            }
            return a == null ? null : consume(a);
        }
        for (Iterator<TagArrival> it = unexpectedAll.iterator(); it.hasNext(); ) {
            TagArrival a = it.next();
            if (a.consumed) {
                it.remove();
            } else if (((a.tag() ^ tag) & mask) == 0) {
                it.remove();
                return consume(a);
            }
        }
        return null;
    }

    private TagArrival consume(TagArrival a) {
        a.consumed = true;
        unexpectedCount--;
        if (unexpectedCount == 0) {
            unexpectedAll.clear();
            unexpectedByTag.clear();
        }
        return a;
    }

    /** Fails every posted receive with {@code cause} and discards every arrival; later posts fail too. Idempotent. */
    public void close(Throwable cause) {
        assert loop.inEventLoop();
        if (closed != null) {
            return;
        }
        closed = cause != null ? cause : new ClosedChannelException();
        List<TagReceive> receives = new ArrayList<>(wildcardExpected);
        exactExpected.values().forEach(receives::addAll);
        wildcardExpected.clear();
        exactExpected.clear();
        expectedCount = 0;
        for (TagReceive r : receives) {
            r.fail(closed);
        }
        for (TagArrival a : unexpectedAll) {
            if (!a.consumed) {
                a.consumed = true;
                a.discard();
            }
        }
        unexpectedAll.clear();
        unexpectedByTag.clear();
        unexpectedCount = 0;
    }
}
