package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.util.concurrent.Promise;
import io.nucx.transport.Buffers;
import io.nucx.transport.ShortPayload;

import java.util.Objects;

/**
 * A posted receive ({@code ucp_tag_recv_nbx}): a tag and mask, the user's buffer or none, and what gets the message:
 * <ul>
 *   <li>a promise (a {@link TagMessage}); one receive, posted once. Once data start going into its buffer it cannot
 *       be cancelled ({@link #claim()});</li>
 *   <li>a {@link Handler} ({@link #reusable}); the receive may be posted again as soon as its handler was called, so
 *       a loop of receives allocates nothing (UCX's requests come from a pool for the same reason). It cannot be
 *       cancelled. With a buffer of the user's, each message goes into it at its writer index (large ones straight
 *       from the transport, as for a promise's receive), and the handler is told where they are
 *       ({@link Handler#receivedInto}).</li>
 * </ul>
 */
public final class TagReceive {

    /** Gets what a {@link #reusable} receive matched, on the worker's loop. */
    public interface Handler {
        /**
         * A message of {@code tag} arrived; {@code data} is the handler's to release. The receive is no longer posted:
         * it may be posted again from here (it is then matched once this call returns, so a backlog of waiting
         * messages is taken one call at a time, not nested).
         */
        void received(long tag, ByteBuf data);

        /**
         * A message of {@code tag} was written into the receive's own buffer ({@link #reusable(long, long, ByteBuf,
         * Handler)}): {@code length} bytes of {@code into} from {@code index}, its writer index already past them. The
         * receive is no longer posted. By default {@link #received} with a retained slice of those bytes; a handler
         * that overrides this takes them where they are, with no slice and no reference count touched (UCX's receive
         * callback gets the length so).
         */
        default void receivedInto(long tag, ByteBuf into, int index, int length) {
            received(tag, into.retainedSlice(index, length));
        }

        /**
         * The receive ended without a message: its worker closed, or (with a buffer of the user's) the message did not
         * fit ({@link MessageTruncatedException}, the message dropped). It is no longer posted.
         */
        void failed(Throwable cause);
    }

    private final long tag;
    private final long mask;
    private final ByteBuf into;
    private final Promise<TagMessage> promise;
    private final Handler handler;
    /** A reusable receive: posted and not yet matched. */
    private boolean posted;
    long sn;

    /**
     * @param into the buffer to write the message into (its writable bytes are the limit), or null to allocate
     */
    public TagReceive(long tag, long mask, ByteBuf into, Promise<TagMessage> promise) {
        this(tag, mask, into, Objects.requireNonNull(promise, "promise"), null);
    }

    private TagReceive(long tag, long mask, ByteBuf into, Promise<TagMessage> promise, Handler handler) {
        this.tag = tag;
        this.mask = mask;
        this.into = into;
        this.promise = promise;
        this.handler = handler;
    }

    /** A receive for {@code tag} under {@code mask} that {@code handler} completes, to be posted again and again. */
    public static TagReceive reusable(long tag, long mask, Handler handler) {
        return new TagReceive(tag, mask, null, null, Objects.requireNonNull(handler, "handler"));
    }

    /**
     * A {@link #reusable} receive whose messages go into {@code into}, each from its writer index on (its writable
     * bytes are the limit); the handler is told where ({@link Handler#receivedInto}). The user makes room again (say
     * {@code into.clear()}) before posting it again, and owns {@code into} throughout.
     */
    public static TagReceive reusable(long tag, long mask, ByteBuf into, Handler handler) {
        return new TagReceive(tag, mask, Objects.requireNonNull(into, "into"), null,
                Objects.requireNonNull(handler, "handler"));
    }

    /** Whether it is a {@link #reusable} receive. */
    public boolean isReusable() {
        return handler != null;
    }

    /**
     * A reusable receive is being posted: false if it is posted already (a receive waits for one message at a time).
     * Always true for a promise's receive (posted once).
     */
    boolean markPosted() {
        if (handler == null) {
            return true;
        }
        if (posted) {
            return false;
        }
        posted = true;
        return true;
    }

    public long tag() {
        return tag;
    }

    public long mask() {
        return mask;
    }

    /** The user's buffer, or null. */
    public ByteBuf into() {
        return into;
    }

    /** The promise that gets the message; null for a {@link #reusable} receive. */
    public Promise<TagMessage> promise() {
        return promise;
    }

    boolean matches(long incoming) {
        return ((incoming ^ tag) & mask) == 0;
    }

    /** Cancelled or otherwise over while it waited. */
    boolean isDone() {
        return promise != null ? promise.isDone() : !posted;
    }

    /**
     * Data go into this receive's buffer from now on: it can no longer be cancelled. False if it was cancelled first
     * (its buffer is the user's again and must not be touched).
     */
    public boolean claim() {
        return promise == null || promise.setUncancellable();
    }

    /** Whether a message of {@code size} bytes fits (always, without a buffer of the user's). */
    public boolean fits(long size) {
        return into == null || size <= into.writableBytes();
    }

    /** Fails with {@link MessageTruncatedException} for a message of {@code tag} and {@code size} bytes. */
    public void truncated(long msgTag, long size) {
        fail(new MessageTruncatedException(msgTag, size, into.writableBytes()));
    }

    /**
     * A slice of the user's buffer to write a {@code size}-byte message into directly, or null without one (the
     * caller then allocates). The receive is completed with {@link #completeInPlace}.
     */
    public ByteBuf target(int size) {
        return into == null ? null : into.retainedSlice(into.writerIndex(), size).writerIndex(0);
    }

    /** The message was written into the slice {@link #target} gave ({@code data}): advance the user's buffer. */
    public void completeInPlace(long msgTag, ByteBuf data) {
        int start = into.writerIndex();
        int n = data.writerIndex();
        into.writerIndex(start + n);
        if (handler != null) {
            data.release();
            completeInto(msgTag, start, n);
            return;
        }
        complete(msgTag, data);
    }

    /** Completes with {@code data}, copied into the user's buffer if there is one. Owns {@code data}. */
    public void deliver(long msgTag, ByteBuf data) {
        if (into == null) {
            complete(msgTag, data);
            return;
        }
        int n = data.readableBytes();
        int start = into.writerIndex();
        try {
            if (n > into.writableBytes()) {
                truncated(msgTag, n);
                return;
            }
            if (!claim()) {
                return; // cancelled from another thread just now: its buffer is the user's again, leave it alone
            }
            Buffers.append(data, data.readerIndex(), into, n);
        } finally {
            data.release();
        }
        completeInto(msgTag, start, n);
    }

    /**
     * Takes a whole message still where the transport read it ({@link io.nucx.transport.ShortPayload}) straight into
     * the user's buffer, and returns true; false without a buffer of the user's (the caller copies it out and
     * {@link #deliver}s it).
     */
    public boolean deliverFrom(long msgTag, ShortPayload payload) {
        if (into == null) {
            return false;
        }
        int n = payload.length();
        if (n > into.writableBytes()) {
            truncated(msgTag, n);
            return true;
        }
        if (!claim()) {
            return true; // cancelled from another thread just now: its buffer is the user's again, leave it alone
        }
        int start = into.writerIndex();
        payload.copyTo(into, start);
        into.writerIndex(start + n);
        completeInto(msgTag, start, n);
        return true;
    }

    /** The message is the {@code n} bytes of the user's buffer from {@code start}, its writer index past them. */
    private void completeInto(long msgTag, int start, int n) {
        if (handler != null) {
            posted = false; // before the call: the handler may post it again
            handler.receivedInto(msgTag, into, start, n);
            return;
        }
        complete(msgTag, into.retainedSlice(start, n));
    }

    private void complete(long msgTag, ByteBuf data) {
        if (handler != null) {
            posted = false; // before the call: the handler may post it again
            handler.received(msgTag, data);
            return;
        }
        TagMessage m = new TagMessage(msgTag, data);
        if (!promise.trySuccess(m)) {
            m.release(); // cancelled meanwhile
        }
    }

    public void fail(Throwable cause) {
        if (handler != null) {
            if (posted) {
                posted = false;
                handler.failed(cause);
            }
            return;
        }
        promise.tryFailure(cause);
    }
}
