package io.nucx.protocol.tag;

import io.netty.channel.Channel;
import io.netty.channel.ChannelPromise;
import io.netty.util.concurrent.Future;
import io.nucx.protocol.ProtocolException;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A worker's eager zero-copy sends ({@code egr/single/zcopy}, {@code egr/multi/zcopy}) waiting for EAGER_ZCOPY_ACK:
 * sender request id → the user's promise. The frames hold their own slices of the user's buffer until they are
 * written; the promise completes when the receiver says the whole message arrived. Request ids are local and indirect
 * (a map, not a reference), so an acknowledgement from a peer that went away, or a forged one, finds nothing. Confined
 * to the worker's loop.
 */
public final class ZcopySends {

    private record Pending(Channel endpoint, ChannelPromise promise) {
    }

    private final Map<Long, Pending> pending = new HashMap<>();
    private long nextId = 1;

    long add(Channel endpoint, ChannelPromise promise) {
        long id = nextId++;
        pending.put(id, new Pending(endpoint, promise));
        return id;
    }

    /** Sends waiting for their acknowledgement. */
    public int size() {
        return pending.size();
    }

    /** The data could not be written: the send fails now (a late acknowledgement then finds nothing). */
    void failed(long id, Throwable cause) {
        Pending p = pending.remove(id);
        if (p != null) {
            p.promise().tryFailure(cause);
        }
    }

    /** The receiver has the whole message. An id this endpoint is not waiting for is a protocol error. */
    public void onAck(Channel source, long id) {
        Pending p = pending.get(id);
        if (p == null || p.endpoint() != source) {
            throw new ProtocolException("EAGER_ZCOPY_ACK for unknown zero-copy send " + id + " from " + source);
        }
        pending.remove(id);
        p.promise().trySuccess();
    }

    /** The promises of {@code endpoint}'s sends still waiting for the receiver (a graceful close waits for them). */
    public List<Future<Void>> promisesOf(Channel endpoint) {
        List<Future<Void>> out = new ArrayList<>();
        for (Pending p : pending.values()) {
            if (p.endpoint() == endpoint) {
                out.add(p.promise());
            }
        }
        return out;
    }

    /** The endpoint went away: its waiting sends fail. */
    public void onEndpointClosed(Channel endpoint, Throwable cause) {
        List<Long> dead = new ArrayList<>();
        pending.forEach((id, p) -> {
            if (p.endpoint() == endpoint) {
                dead.add(id);
            }
        });
        for (Long id : dead) {
            failed(id, cause);
        }
    }

    /** Fails every waiting send. */
    public void close(Throwable cause) {
        for (Long id : new ArrayList<>(pending.keySet())) {
            failed(id, cause);
        }
    }
}
