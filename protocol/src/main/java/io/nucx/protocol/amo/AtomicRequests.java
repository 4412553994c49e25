package io.nucx.protocol.amo;

import io.netty.channel.Channel;
import io.netty.util.concurrent.Future;
import io.nucx.protocol.PendingRequests;
import io.nucx.protocol.ProtocolException;

import java.util.List;

/** A worker's atomics waiting for ATOMIC_REP: request id → endpoint and result. Loop only. */
public final class AtomicRequests {

    private record Pending(Channel endpoint, AtomicRequest request) {
    }

    private final PendingRequests<Pending> pending = new PendingRequests<>(Pending::endpoint);

    long add(Channel endpoint, AtomicRequest request) {
        return pending.add(new Pending(endpoint, request));
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
        Pending p = pending.take(id, source);
        if (p == null) {
            throw new ProtocolException("ATOMIC_REP for unknown request " + id + " from " + source);
        }
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
    public List<Future<Long>> promisesOf(Channel endpoint) {
        return pending.of(endpoint).stream().<Future<Long>>map(p -> p.request().result()).toList();
    }

    /** The endpoint went away: its waiting atomics fail (whether the peer applied them is unknown). */
    public void onEndpointClosed(Channel endpoint, Throwable cause) {
        pending.takeAll(endpoint).forEach(p -> p.request().result().tryFailure(cause));
    }
}
