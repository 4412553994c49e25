package io.nucx.protocol;

import io.netty.util.collection.LongObjectHashMap;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One endpoint's requests of one kind waiting for the peer's answer, by request id (sync and zero-copy sends,
 * rendezvous sends and receives, atomics). Ids are local and indirect (a map, not a reference), so an answer naming
 * an id that is not waiting, from a peer that lost track or forged it, finds nothing. Confined to the endpoint's loop.
 *
 * @param <P> what waits
 */
public final class PendingRequests<P> {

    /** Keyed by the primitive id: no boxed key or map node per request (a rendezvous made three of them). */
    private final LongObjectHashMap<P> pending = new LongObjectHashMap<>();
    /** Also counts what waits here, for metrics read from other threads; null when nobody asks. */
    private final AtomicInteger gauge;
    private long nextId = 1;

    public PendingRequests() {
        this(null);
    }

    /** @param gauge incremented for each request registered here, decremented as each leaves */
    public PendingRequests(AtomicInteger gauge) {
        this.gauge = gauge;
    }

    /** Registers {@code p}; returns its request id. */
    public long add(P p) {
        long id = nextId++;
        pending.put(id, p);
        if (gauge != null) {
            gauge.incrementAndGet();
        }
        return id;
    }

    /** The id the next {@link #add} returns. */
    public long peekNextId() {
        return nextId;
    }

    public int size() {
        return pending.size();
    }

    public boolean isEmpty() {
        return pending.isEmpty();
    }

    /** The request with this id, still registered, or null. */
    public P get(long id) {
        return pending.get(id);
    }

    /** Removes and returns {@code id}, or null. */
    public P remove(long id) {
        P p = pending.remove(id);
        if (p != null && gauge != null) {
            gauge.decrementAndGet();
        }
        return p;
    }

    /** What waits, still registered. */
    public Collection<P> values() {
        return pending.values();
    }

    /** Removes and returns everything. */
    public List<P> takeAll() {
        List<P> out = new ArrayList<>(pending.values());
        pending.clear();
        if (gauge != null) {
            gauge.addAndGet(-out.size());
        }
        return out;
    }
}
