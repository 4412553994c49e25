package io.nucx.wireup;

import io.netty.buffer.ByteBuf;
import io.netty.channel.EventLoop;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import io.nucx.AmMessage;
import io.nucx.Endpoint;
import io.nucx.protocol.am.AmIncoming;

import java.util.concurrent.RejectedExecutionException;

/**
 * An {@link AmMessage} over the protocol layer's {@link AmIncoming}: hands calls from other threads to the loop. A
 * short message's object is reused for a later one once released ({@link AmIncoming#generation()}): a call made
 * after this message was released, its object carrying another now, fails as one on a released message does, and a
 * second release does nothing, so a handle kept by mistake cannot reach the later message. The generation is read
 * without a fence: that holds on the loop, where a message not kept is used; a kept one is never reused.
 */
final class ReceivedAm implements AmMessage {

    private final AmIncoming in;
    private final int id;
    private final int generation;
    private final EndpointChannel endpoint;
    private final EventLoop loop;

    /** On the loop, during the message's trip. */
    ReceivedAm(AmIncoming in, EndpointChannel endpoint) {
        this.in = in;
        this.id = in.id();
        this.generation = in.generation();
        this.endpoint = endpoint;
        this.loop = endpoint.eventLoop();
    }

    /**
     * The message, if it was not released (its object may carry a later one since): every call but {@link #id()}
     * and {@link #release()} fails alike on a released message, whether or not its object was reused yet.
     */
    private AmIncoming in() {
        if (in.generation() != generation || in.isReleased()) {
            throw new IllegalStateException("active message " + id + " was released");
        }
        return in;
    }

    @Override
    public int id() {
        return id;
    }

    @Override
    public ByteBuf header() {
        return in().header();
    }

    @Override
    public long dataLength() {
        return in().dataLength();
    }

    @Override
    public boolean isRendezvous() {
        return in().isRendezvous();
    }

    @Override
    public ByteBuf data() {
        return in().data();
    }

    @Override
    public Endpoint replyEndpoint() {
        return in().replyRequested() ? endpoint : null;
    }

    @Override
    public AmMessage keep() {
        if (!loop.inEventLoop()) {
            throw new IllegalStateException("keep() is for the handler, on its worker's loop");
        }
        in().keep();
        return this;
    }

    @Override
    public Future<Void> receiveData(ByteBuf into) {
        Promise<Void> done = loop.newPromise();
        if (loop.inEventLoop()) {
            receive(into, done);
        } else {
            try {
                loop.execute(() -> receive(into, done));
            } catch (RejectedExecutionException e) {
                done.tryFailure(e);
            }
        }
        return done;
    }

    private void receive(ByteBuf into, Promise<Void> done) {
        try {
            in().receive(into, done);
        } catch (IllegalArgumentException | IllegalStateException | IndexOutOfBoundsException e) {
            done.tryFailure(e);
        }
    }

    @Override
    public void release() {
        if (loop.inEventLoop()) {
            releaseNow();
            return;
        }
        try {
            loop.execute(this::releaseNow);
        } catch (RejectedExecutionException e) {
            // The worker's loop is gone, and with it the endpoint: nothing to tell the sender, and nothing reuses
            // the object any more (it may have before: a stale handle's release still does nothing). The header is
            // the loop's allocator's; releasing it from here is safe.
            releaseNow();
        }
    }

    /** Releases the message if its object still carries it: else it was released already (idempotent). */
    private void releaseNow() {
        if (in.generation() == generation) {
            in.release();
        }
    }

    @Override
    public String toString() {
        return (in.generation() == generation ? in.toString() : "AmMessage(id=" + id + ", released)") + " from "
                + endpoint;
    }
}
