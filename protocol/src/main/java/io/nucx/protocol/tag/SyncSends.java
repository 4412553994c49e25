package io.nucx.protocol.tag;

import io.netty.channel.Channel;
import io.netty.channel.ChannelPromise;
import io.netty.util.concurrent.Future;
import io.nucx.protocol.PendingRequests;
import io.nucx.protocol.ProtocolException;

import java.util.List;

/**
 * A worker's synchronous eager sends waiting for EAGER_SYNC_ACK: sender request id → the user's promise. The data
 * has gone (or is going); the promise completes when the receiver says it matched the message. Loop only.
 */
public final class SyncSends {

    private record Pending(long tag, long length, Channel endpoint, ChannelPromise promise) {
    }

    private final PendingRequests<Pending> pending = new PendingRequests<>(Pending::endpoint);

    long add(long tag, long length, Channel endpoint, ChannelPromise promise) {
        return pending.add(new Pending(tag, length, endpoint, promise));
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
        Pending p = pending.take(id, source);
        if (p == null) {
            throw new ProtocolException("EAGER_SYNC_ACK for unknown send " + id + " from " + source);
        }
        if (status == RndvHeaders.STATUS_OK) {
            p.promise().trySuccess();
        } else if (status == RndvHeaders.STATUS_TRUNCATED) {
            p.promise().tryFailure(new MessageTruncatedException(p.tag(), p.length(), -1));
        } else {
            p.promise().tryFailure(new ProtocolException("synchronous send " + id + " ended with status " + status));
        }
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
