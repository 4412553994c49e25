package io.nucx.protocol.am;

import io.netty.channel.Channel;

import java.util.Arrays;

/**
 * A worker's active-message handlers by id (UCX's {@code worker->am}). Set from any thread and effective at once (a
 * message arriving after the set returned finds it); read on the worker's loop without locking.
 */
public final class AmHandlerTable {

    /** Takes an arrived active message; runs on the worker's loop. */
    @FunctionalInterface
    public interface Receiver {
        /** {@code endpoint} is the endpoint it came by. */
        void onMessage(AmIncoming message, Channel endpoint);
    }

    /** Replaced whole on each change, so a reader sees one consistent table. */
    private volatile Receiver[] handlers = new Receiver[0];

    /**
     * Sets the handler of {@code id}, or removes it ({@code receiver} null).
     *
     * @throws IllegalArgumentException for an id outside 0..{@link AmHeaders#MAX_ID}
     */
    public synchronized void set(int id, Receiver receiver) {
        if (id < 0 || id > AmHeaders.MAX_ID) {
            throw new IllegalArgumentException("active message id " + id + " (0 to " + AmHeaders.MAX_ID + ")");
        }
        Receiver[] now = handlers;
        Receiver[] next = Arrays.copyOf(now, Math.max(now.length, receiver == null ? 0 : id + 1));
        if (id < next.length) {
            next[id] = receiver;
        }
        handlers = next;
    }

    /** The handler of {@code id}, or null. */
    public Receiver get(int id) {
        Receiver[] h = handlers;
        return id < h.length ? h[id] : null;
    }
}
