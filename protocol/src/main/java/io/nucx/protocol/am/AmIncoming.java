package io.nucx.protocol.am;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.util.concurrent.Promise;
import io.nucx.protocol.ProtocolException;
import io.nucx.transport.Buffers;
import io.nucx.transport.ShortPayload;

/**
 * An active message that arrived, on its way to the worker's handler for its id: the user header, and the data
 * either here (eager: a slice of the same payload, or, for a short one, still where the transport read it:
 * {@link #inPlace}) or still at the sender (rendezvous: {@link #receive} asks for them into the caller's buffer).
 * Its carrying codec fires it up the endpoint's pipeline when it is whole (eager) or when its RTS arrives
 * (rendezvous), so the handler sees one endpoint's messages in the order they were sent.
 *
 * <p>It is the handler's during the call; after that the {@link AmCodec} releases it unless the handler
 * {@link #keep() kept} it, which makes releasing it the holder's job. Releasing a rendezvous message whose data were
 * never asked for tells the sender it is done (UCX's ATS after a callback that did not receive: the send completes
 * successfully). A short message's object ({@link InPlace}) is reused for a later one once released: a holder that
 * did not keep it compares {@link #generation()} before touching it again. Loop only.
 */
public abstract class AmIncoming {

    private int id;
    private int flags;
    private long dataLength;
    private ByteBuf header;
    private boolean kept;
    private boolean receiving;
    private boolean released;
    /** Which message this object carries: a message read in place may reuse the object of one released before. */
    private int generation;

    /** Owns {@code header}; null: made when first asked for ({@link #headerNow}). */
    protected AmIncoming(long tagField, ByteBuf header, long dataLength) {
        carry(tagField, header, dataLength);
    }

    /** What a message's fields are, for the constructor and for {@link #reuse}. */
    private void carry(long tagField, ByteBuf header, long dataLength) {
        this.id = AmHeaders.id(tagField);
        this.flags = AmHeaders.flags(tagField);
        this.header = header;
        this.dataLength = dataLength;
    }

    /** This object carries a new message, as the constructor would make it; the one before was released. */
    private void reuse(long tagField, ByteBuf header, long dataLength) {
        carry(tagField, header, dataLength);
        this.kept = false;
        this.receiving = false;
        this.released = false;
        this.generation++;
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
            headerLength = headerLength(tagField, payload.readableBytes());
        } catch (RuntimeException e) {
            payload.release();
            throw e;
        }
        return new Eager(tagField, payload, headerLength);
    }

    /**
     * An eager message whose payload (the user header, then the data) is still where the transport read it, valid
     * until {@link #arrivalEnded}, which the carrier calls when the message's trip up the pipeline returns: what the
     * handler receives into a buffer of its own is copied there straight from the transport's memory, what it does
     * not touch is never copied, and a message still held then (kept, or queued by a handler of the user's) copies its
     * payload out first, so it stays valid until released as every other (UCX's {@code am_recv_cb} data: in place
     * during the callback, kept only by the callback's say).
     *
     * @throws ProtocolException when the payload is shorter than the header it announces
     */
    public static InPlace inPlace(long tagField, ShortPayload payload) {
        return new InPlace(tagField, payload, headerLength(tagField, payload.length()));
    }

    /**
     * As {@link #inPlace(long, ShortPayload)}, in {@code spare}'s object when it is a message released already (its
     * arrival ended): a stream of short messages then makes no object per message. Whoever may still hold the old
     * message tells it from the new by {@link #generation()}.
     */
    public static InPlace inPlace(long tagField, ShortPayload payload, InPlace spare) {
        if (spare == null || !spare.isReleased() || spare.inTransport != null) {
            return inPlace(tagField, payload);
        }
        spare.carryAgain(tagField, payload, headerLength(tagField, payload.length()));
        return spare;
    }

    /** The user header's length {@code tagField} announces, checked against the payload's {@code length}. */
    private static int headerLength(long tagField, int length) {
        int headerLength = AmHeaders.headerLength(tagField);
        if (headerLength > length) {
            throw new ProtocolException("active message of " + length + " bytes announces a " + headerLength
                    + "-byte header");
        }
        return headerLength;
    }

    public final int id() {
        return id;
    }

    /**
     * Which message this object carries: it changes when the object is reused for a later message (only a message
     * read in place, once released). A holder that took it during the message's trip compares it to tell.
     */
    public final int generation() {
        return generation;
    }

    /** Whether the sender asked for a reply endpoint. */
    public final boolean replyRequested() {
        return (flags & AmHeaders.FLAG_REPLY) != 0;
    }

    /** The user header (empty when none was sent): valid until the message is released. */
    public final ByteBuf header() {
        checkNotReleased();
        ByteBuf h = header;
        if (h == null) {
            header = h = headerNow();
        }
        return h;
    }

    /** The user header, made when first asked for, for a subclass that passed none to the constructor. */
    protected ByteBuf headerNow() {
        throw new IllegalStateException("active message " + id + " has no header");
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
        releaseHeader();
        dropData(receiving ? Drop.RECEIVED : Drop.UNWANTED);
    }

    /** Releases the message because no handler is registered for its id: a rendezvous sender is told it failed. */
    public final void refuse() {
        if (released) {
            return;
        }
        released = true;
        releaseHeader();
        dropData(Drop.NO_HANDLER);
    }

    private void releaseHeader() {
        if (header != null) {
            header.release();
            header = null;
        }
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

    protected final void checkNotReleased() {
        if (released) {
            throw new IllegalStateException("active message " + id + " was released");
        }
    }

    @Override
    public String toString() {
        return "AmIncoming(id=" + id + ", " + (isRendezvous() ? "rndv " : "") + dataLength + "B"
                + (replyRequested() ? ", reply" : "") + ")";
    }

    /** An eager message: its data are here, made a buffer only when {@link #data()} asks ({@link #dataNow}). */
    private abstract static class Here extends AmIncoming {
        int headerLength;
        /** The data as a buffer, once asked for. */
        ByteBuf data;

        Here(long tagField, ByteBuf header, long dataLength, int headerLength) {
            super(tagField, header, dataLength);
            this.headerLength = headerLength;
        }

        /** Its part of {@link #reuse}. */
        final void reuseHere(int headerLength) {
            this.headerLength = headerLength;
            this.data = null;
        }

        @Override
        public final boolean isRendezvous() {
            return false;
        }

        @Override
        public final ByteBuf data() {
            checkNotReleased();
            ByteBuf d = data;
            if (d == null) {
                data = d = dataNow();
            }
            return d;
        }

        /** The data as a buffer, asked for the first time. */
        abstract ByteBuf dataNow();
    }

    /**
     * An eager message: header and data are slices of one payload, each made only when there is one (a header) or
     * when it is asked for (the data): a handler that receives the data into a buffer of its own gets them from the
     * payload, with no object per message for them.
     */
    private static final class Eager extends Here {
        private ByteBuf payload;

        Eager(long tagField, ByteBuf payload, int headerLength) {
            super(tagField, headerLength == 0 ? Unpooled.EMPTY_BUFFER : payload.retainedSlice(payload.readerIndex(),
                    headerLength), payload.readableBytes() - headerLength, headerLength);
            this.payload = payload;
        }

        @Override
        ByteBuf dataNow() {
            return payload.slice(payload.readerIndex() + headerLength, (int) dataLength());
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

    /**
     * An eager message read in place ({@link #inPlace}): the payload is the transport's until {@link #arrivalEnded}.
     * The header and {@link #data()} are buffers, so asking for one copies its part out (once); {@link #receive}
     * copies the data straight to the caller's buffer; what is still held when the arrival ends is copied out then.
     */
    public static final class InPlace extends Here {
        /** Where the transport read the payload; null once the arrival ended. */
        private ShortPayload inTransport;

        InPlace(long tagField, ShortPayload inTransport, int headerLength) {
            super(tagField, noHeaderYet(headerLength), inTransport.length() - headerLength, headerLength);
            this.inTransport = inTransport;
        }

        /** This released object carries a new message, as the constructor would make it. */
        private void carryAgain(long tagField, ShortPayload inTransport, int headerLength) {
            ((AmIncoming) this).reuse(tagField, noHeaderYet(headerLength), inTransport.length() - headerLength);
            reuseHere(headerLength);
            this.inTransport = inTransport;
        }

        /** An empty header is there at once; any other is copied out when first asked for ({@link #headerNow}). */
        private static ByteBuf noHeaderYet(int headerLength) {
            return headerLength == 0 ? Unpooled.EMPTY_BUFFER : null;
        }

        /**
         * The message's trip up the pipeline returned and the transport's memory is about to be reused: a message not
         * yet released copies out what it has not yet (its data then its own buffer). Called once, by the carrier.
         */
        public void arrivalEnded() {
            if (inTransport != null && !isReleased()) {
                header();
                data();
            }
            inTransport = null;
        }

        private ShortPayload inTransport() {
            ShortPayload p = inTransport;
            if (p == null) {
                throw new IllegalStateException("active message " + id() + " read in place after its arrival ended");
            }
            return p;
        }

        @Override
        protected ByteBuf headerNow() {
            return inTransport().copyOut(0, headerLength);
        }

        @Override
        ByteBuf dataNow() {
            return inTransport().copyOut(headerLength, (int) dataLength());
        }

        @Override
        protected void receiveData(ByteBuf into, Promise<Void> done) {
            int n = (int) dataLength();
            ByteBuf d = data;
            if (d != null) {
                Buffers.append(d, d.readerIndex(), into, n);
            } else {
                inTransport().copyTo(headerLength, n, into, into.writerIndex());
                into.writerIndex(into.writerIndex() + n);
            }
            done.trySuccess(null);
        }

        @Override
        protected void dropData(Drop why) {
            if (data != null) {
                data.release(); // its own copy
                data = null;
            }
        }
    }
}
