package io.nucx.protocol.tag;

import io.netty.channel.Channel;
import io.netty.channel.ChannelPromise;
import io.netty.util.concurrent.Future;
import io.nucx.protocol.PendingRequests;
import io.nucx.protocol.ProtocolException;

import java.util.List;

/**
 * A worker's eager zero-copy sends ({@code egr/single/zcopy}, {@code egr/multi/zcopy}) waiting for EAGER_ZCOPY_ACK:
 * sender request id → the user's promise. The frames hold their own slices of the user's buffer until they are
 * written; the promise completes when the receiver says the whole message arrived. Request ids are indirect
 * ({@link PendingRequests}), so an acknowledgement from a peer that went away, or a forged one, finds nothing.
 * Confined to the worker's loop.
 */
public final class ZcopySends {

    private record Pending(Channel endpoint, ChannelPromise promise) {
    }

    private final PendingRequests<Pending> pending = new PendingRequests<>(Pending::endpoint);

    long add(Channel endpoint, ChannelPromise promise) {
        return pending.add(new Pending(endpoint, promise));
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
        Pending p = pending.take(id, source);
        if (p == null) {
            throw new ProtocolException("EAGER_ZCOPY_ACK for unknown zero-copy send " + id + " from " + source);
        }
        p.promise().trySuccess();
    }

    /** The promises of {@code endpoint}'s sends still waiting for the receiver (a graceful close waits for them). */
    public List<Future<Void>> promisesOf(Channel endpoint) {
        return pending.of(endpoint).stream().<Future<Void>>map(Pending::promise).toList();
    }

    /** The endpoint went away: its waiting sends fail. */
    public void onEndpointClosed(Channel endpoint, Throwable cause) {
        pending.takeAll(endpoint).forEach(p -> p.promise().tryFailure(cause));
    }

    /** Fails every waiting send. */
    public void close(Throwable cause) {
        pending.takeAll().forEach(p -> p.promise().tryFailure(cause));
    }
}
