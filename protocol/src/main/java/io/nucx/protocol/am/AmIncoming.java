package io.nucx.protocol.am;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.util.concurrent.Promise;
import io.nucx.protocol.ProtocolException;
import io.nucx.transport.Buffers;

/**
 * An active message that arrived, on its way to the worker's handler for its id: the user header, and the data
 * either here (eager: a slice of the same payload) or still at the sender (rendezvous: {@link #receive} asks for them
 * into the caller's buffer). Its carrying codec fires it up the endpoint's pipeline when it is whole (eager) or when
 * its RTS arrives (rendezvous), so the handler sees one endpoint's messages in the order they were sent.
 *
 * <p>It is the handler's during the call; after that the {@link AmCodec} releases it unless the handler
 * {@link #keep() kept} it, which makes releasing it the holder's job. Releasing a rendezvous message whose data were
 * never asked for tells the sender it is done (UCX's ATS after a callback that did not receive: the send completes
 * successfully). Loop only.
 */
public abstract class AmIncoming {

    private final int id;
    private final int flags;
    private final long dataLength;
    private ByteBuf header;
    private boolean kept;
    private boolean receiving;
    private boolean released;

    /** Owns {@code header}. */
    protected AmIncoming(long tagField, ByteBuf header, long dataLength) {
        this.id = AmHeaders.id(tagField);
        this.flags = AmHeaders.flags(tagField);
        this.header = header;
        this.dataLength = dataLength;
    }

    /**
     * An eager message: {@code payload} is the user header (its length from {@code tagField}) then the data. Owns
     * {@code payload}.
     *
     * @throws ProtocolException when the payload is shorter than the header it announces (and releases it)
     */
    public static AmIncoming eager(long tagField, ByteBuf payload) {
        int headerLength;
        try {
            headerLength = AmHeaders.headerLength(tagField);
            if (headerLength > payload.readableBytes()) {
                throw new ProtocolException("active message of " + payload.readableBytes() + " bytes announces a "
                        + headerLength + "-byte header");
            }
        } catch (RuntimeException e) {
            payload.release();
            throw e;
        }
        return new Eager(tagField, payload, headerLength);
    }

    public final int id() {
        return id;
    }

    /** Whether the sender asked for a reply endpoint. */
    public final boolean replyRequested() {
        return (flags & AmHeaders.FLAG_REPLY) != 0;
    }

    /** The user header (empty when none was sent): valid until the message is released. */
    public final ByteBuf header() {
        checkNotReleased();
        return header;
    }

    public final long dataLength() {
        return dataLength;
    }

    /** Whether the data are still at the sender. */
    public abstract boolean isRendezvous();

    /**
     * The data of an eager message, valid until the message is released (retain it to keep it longer).
     *
     * @throws IllegalStateException for a rendezvous message ({@link #receive} them) or after release
     */
    public ByteBuf data() {
        throw new IllegalStateException("active message " + id + " came by rendezvous: its " + dataLength
                + " bytes are still at the sender; receive them into a buffer of yours");
    }

    /** The message outlives the handler's call: its holder releases it. */
    public final void keep() {
        checkNotReleased();
        kept = true;
    }

    public final boolean isKept() {
        return kept;
    }

    public final boolean isReleased() {
        return released;
    }

    /**
     * Writes the data into {@code into} at its writer index, advancing it (growing it first if it may grow);
     * {@code done} completes when they are all there (eager: now; rendezvous: when they arrived). Once only.
     *
     * @throws IllegalArgumentException when {@code into} has fewer writable bytes than the data
     * @throws IllegalStateException    when the message was released or its data were received already
     */
    public final void receive(ByteBuf into, Promise<Void> done) {
        checkNotReleased();
        if (receiving) {
            throw new IllegalStateException("the data of active message " + id + " were received already");
        }
        if (into.maxWritableBytes() < dataLength) {
            throw new IllegalArgumentException("active message " + id + " has " + dataLength + " bytes of data; the "
                    + "buffer has room for " + into.maxWritableBytes());
        }
        into.ensureWritable((int) dataLength);
        receiving = true;
        receiveData(into, done);
    }

    /** Releases the header and any data here; a rendezvous whose data nobody asked for is ended at the sender. */
    public final void release() {
        if (released) {
            return;
        }
        released = true;
        header.release();
        header = null;
        dropData(receiving ? Drop.RECEIVED : Drop.UNWANTED);
    }

    /** Releases the message because no handler is registered for its id: a rendezvous sender is told it failed. */
    public final void refuse() {
        if (released) {
            return;
        }
        released = true;
        header.release();
        header = null;
        dropData(Drop.NO_HANDLER);
    }

    /** Why the message is released. */
    protected enum Drop {
        /** Its data were received (or are being received): nothing more to do. */
        RECEIVED,
        /** Nobody asked for its data. */
        UNWANTED,
        /** No handler for its id. */
        NO_HANDLER
    }

    /** Starts receiving the data into {@code into} (room checked). */
    protected abstract void receiveData(ByteBuf into, Promise<Void> done);

    /** The message is released: let go of the data. */
    protected abstract void dropData(Drop why);

    private void checkNotReleased() {
        if (released) {
            throw new IllegalStateException("active message " + id + " was released");
        }
    }

    @Override
    public String toString() {
        return "AmIncoming(id=" + id + ", " + (isRendezvous() ? "rndv " : "") + dataLength + "B"
                + (replyRequested() ? ", reply" : "") + ")";
    }

    /**
     * An eager message: header and data are slices of one payload, each made only when there is one (a header) or
     * when it is asked for (the data): a handler that receives the data into a buffer of its own gets them from the
     * payload, with no object per message for them.
     */
    private static final class Eager extends AmIncoming {
        private ByteBuf payload;
        private final int headerLength;
        private ByteBuf data;

        Eager(long tagField, ByteBuf payload, int headerLength) {
            super(tagField, headerLength == 0 ? Unpooled.EMPTY_BUFFER : payload.retainedSlice(payload.readerIndex(),
                    headerLength), payload.readableBytes() - headerLength);
            this.payload = payload;
            this.headerLength = headerLength;
        }

        @Override
        public boolean isRendezvous() {
            return false;
        }

        @Override
        public ByteBuf data() {
            if (isReleased()) {
                throw new IllegalStateException("active message " + id() + " was released");
            }
            ByteBuf d = data;
            if (d == null) {
                data = d = payload.slice(payload.readerIndex() + headerLength, (int) dataLength());
            }
            return d;
        }

        @Override
        protected void receiveData(ByteBuf into, Promise<Void> done) {
            ByteBuf d = data; // what a handler read of data() already is not received again
            if (d != null) {
                Buffers.append(d, d.readerIndex(), into, d.readableBytes());
            } else {
                Buffers.append(payload, payload.readerIndex() + headerLength, into, (int) dataLength());
            }
            done.trySuccess(null);
        }

        @Override
        protected void dropData(Drop why) {
            if (payload != null) {
                payload.release();
                payload = null;
                data = null;
            }
        }
    }
}
