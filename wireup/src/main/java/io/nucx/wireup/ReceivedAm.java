package io.nucx.wireup;

import io.netty.buffer.ByteBuf;
import io.netty.channel.EventLoop;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import io.nucx.AmMessage;
import io.nucx.Endpoint;
import io.nucx.protocol.am.AmIncoming;

import java.util.concurrent.RejectedExecutionException;

/** An {@link AmMessage} over the protocol layer's {@link AmIncoming}: hands calls from other threads to the loop. */
final class ReceivedAm implements AmMessage {

    private final AmIncoming in;
    private final EndpointChannel endpoint;
    private final EventLoop loop;

    ReceivedAm(AmIncoming in, EndpointChannel endpoint) {
        this.in = in;
        this.endpoint = endpoint;
        this.loop = endpoint.eventLoop();
    }

    @Override
    public int id() {
        return in.id();
    }

    @Override
    public ByteBuf header() {
        return in.header();
    }

    @Override
    public long dataLength() {
        return in.dataLength();
    }

    @Override
    public boolean isRendezvous() {
        return in.isRendezvous();
    }

    @Override
    public ByteBuf data() {
        return in.data();
    }

    @Override
    public Endpoint replyEndpoint() {
        return in.replyRequested() ? endpoint : null;
    }

    @Override
    public AmMessage keep() {
        if (!loop.inEventLoop()) {
            throw new IllegalStateException("keep() is for the handler, on its worker's loop");
        }
        in.keep();
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
            in.receive(into, done);
        } catch (IllegalArgumentException | IllegalStateException | IndexOutOfBoundsException e) {
            done.tryFailure(e);
        }
    }

    @Override
    public void release() {
        if (loop.inEventLoop()) {
            in.release();
            return;
        }
        try {
            loop.execute(in::release);
        } catch (RejectedExecutionException e) {
            // The worker's loop is gone, and with it the endpoint: nothing to tell the sender. The header is the
            // loop's allocator's; releasing it from here is safe.
            in.release();
        }
    }

    @Override
    public String toString() {
        return in + " from " + endpoint;
    }
}
