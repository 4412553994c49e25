package io.nucx.protocol.tag;

import io.netty.channel.Channel;
import io.netty.channel.ChannelPromise;
import io.nucx.protocol.ProtocolException;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A worker's synchronous eager sends waiting for EAGER_SYNC_ACK: sender request id → the user's promise. The data
 * has gone (or is going); the promise completes when the receiver says it matched the message. Loop only.
 */
public final class SyncSends {

    private record Pending(long tag, long length, Channel endpoint, ChannelPromise promise) {
    }

    private final Map<Long, Pending> pending = new HashMap<>();
    private long nextId = 1;

    long add(long tag, long length, Channel endpoint, ChannelPromise promise) {
        long id = nextId++;
        pending.put(id, new Pending(tag, length, endpoint, promise));
        return id;
    }

    /** Sends waiting for their acknowledgement. */
    public int size() {
        return pending.size();
    }

    /** The data could not be sent: the send fails now. */
    void failed(long id, Throwable cause) {
        Pending p = pending.remove(id);
        if (p != null) {
            p.promise().tryFailure(cause);
        }
    }

    /** The receiver matched the message (or refused it as too long for its buffer). */
    public void onAck(Channel source, long id, int status) {
        Pending p = pending.get(id);
        if (p == null || p.endpoint() != source) {
            throw new ProtocolException("EAGER_SYNC_ACK for unknown send " + id + " from " + source);
        }
        pending.remove(id);
        if (status == RndvHeaders.STATUS_OK) {
            p.promise().trySuccess();
        } else if (status == RndvHeaders.STATUS_TRUNCATED) {
            p.promise().tryFailure(new MessageTruncatedException(p.tag(), p.length(), -1));
        } else {
            p.promise().tryFailure(new ProtocolException("synchronous send " + id + " ended with status " + status));
        }
    }

    /** The promises of {@code endpoint}'s sends still waiting for the receiver (a graceful close waits for them). */
    public List<io.netty.util.concurrent.Future<Void>> promisesOf(Channel endpoint) {
        List<io.netty.util.concurrent.Future<Void>> out = new ArrayList<>();
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
