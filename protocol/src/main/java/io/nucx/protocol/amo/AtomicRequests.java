package io.nucx.protocol.amo;

import io.netty.channel.Channel;
import io.netty.util.concurrent.Promise;
import io.nucx.protocol.ProtocolException;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** A worker's atomics waiting for ATOMIC_REP: request id → endpoint and result. Loop only. */
public final class AtomicRequests {

    private record Pending(Channel endpoint, AtomicRequest request) {
    }

    private final Map<Long, Pending> pending = new HashMap<>();
    private long nextId = 1;

    long add(Channel endpoint, AtomicRequest request) {
        long id = nextId++;
        pending.put(id, new Pending(endpoint, request));
        return id;
    }

    public int size() {
        return pending.size();
    }

    void failed(long id, Throwable cause) {
        Pending p = pending.remove(id);
        if (p != null) {
            p.request().result().tryFailure(cause);
        }
    }

    void onReply(Channel source, long id, int status, long value) {
        Pending p = pending.get(id);
        if (p == null || p.endpoint() != source) {
            throw new ProtocolException("ATOMIC_REP for unknown request " + id + " from " + source);
        }
        pending.remove(id);
        AtomicRequest r = p.request();
        if (status == AmoHeaders.STATUS_OK) {
            r.result().trySuccess(value);
        } else {
            r.result().tryFailure(new RemoteAccessException(r.op() + " at " + Long.toHexString(r.address())
                    + " of region " + r.key().region() + " (" + Long.toHexString(r.key().base()) + ", "
                    + r.key().length() + " bytes) refused by the peer: " + AmoHeaders.statusText(status)));
        }
    }

    /** The results of {@code endpoint}'s atomics still waiting (a graceful close waits for them). */
    public List<io.netty.util.concurrent.Future<Long>> promisesOf(Channel endpoint) {
        List<io.netty.util.concurrent.Future<Long>> out = new ArrayList<>();
        for (Pending p : pending.values()) {
            if (p.endpoint() == endpoint) {
                out.add(p.request().result());
            }
        }
        return out;
    }

    /** The endpoint went away: its waiting atomics fail (whether the peer applied them is unknown). */
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
}
