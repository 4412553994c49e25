package io.nucx.protocol;

import io.netty.channel.Channel;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * Operations waiting for a peer's answer, by request id (sync and zero-copy sends, atomics). Ids are local and
 * indirect (a map, not a reference): an answer from a peer that went away, from another endpoint, or forged, finds
 * nothing. Confined to the worker's loop.
 *
 * @param <P> what waits: it knows its endpoint ({@code endpointOf})
 */
public final class PendingRequests<P> {

    private final Map<Long, P> pending = new HashMap<>();
    private final Function<P, Channel> endpointOf;
    private long nextId = 1;

    public PendingRequests(Function<P, Channel> endpointOf) {
        this.endpointOf = endpointOf;
    }

    /** Registers {@code p}; returns its request id. */
    public long add(P p) {
        long id = nextId++;
        pending.put(id, p);
        return id;
    }

    public int size() {
        return pending.size();
    }

    /** Removes and returns {@code id}, or null. */
    public P remove(long id) {
        return pending.remove(id);
    }

    /** Removes and returns {@code id} if it waits for an answer from {@code source}; else null (nothing removed). */
    public P take(long id, Channel source) {
        P p = pending.get(id);
        if (p == null || endpointOf.apply(p) != source) {
            return null;
        }
        pending.remove(id);
        return p;
    }

    /** What waits on {@code endpoint}, still registered. */
    public List<P> of(Channel endpoint) {
        List<P> out = new ArrayList<>();
        for (P p : pending.values()) {
            if (endpointOf.apply(p) == endpoint) {
                out.add(p);
            }
        }
        return out;
    }

    /** Removes and returns what waits on {@code endpoint}. */
    public List<P> takeAll(Channel endpoint) {
        List<P> out = new ArrayList<>();
        pending.values().removeIf(p -> {
            if (endpointOf.apply(p) == endpoint) {
                out.add(p);
                return true;
            }
            return false;
        });
        return out;
    }

    /** Removes and returns everything. */
    public List<P> takeAll() {
        List<P> out = new ArrayList<>(pending.values());
        pending.clear();
        return out;
    }
}
