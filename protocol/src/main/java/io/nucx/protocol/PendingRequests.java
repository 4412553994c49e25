package io.nucx.protocol;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * One endpoint's requests of one kind waiting for the peer's answer, by request id (sync and zero-copy sends,
 * rendezvous sends and receives, atomics). Ids are local and indirect (a map, not a reference), so an answer naming
 * an id that is not waiting, from a peer that lost track or forged it, finds nothing. Confined to the endpoint's loop.
 *
 * @param <P> what waits
 */
public final class PendingRequests<P> {

    private final Map<Long, P> pending = new HashMap<>();
    private long nextId = 1;

    /** Registers {@code p}; returns its request id. */
    public long add(P p) {
        long id = nextId++;
        pending.put(id, p);
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
        return pending.remove(id);
    }

    /** What waits, still registered. */
    public Collection<P> values() {
        return pending.values();
    }

    /** Removes and returns everything. */
    public List<P> takeAll() {
        List<P> out = new ArrayList<>(pending.values());
        pending.clear();
        return out;
    }
}
