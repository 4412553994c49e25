package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.util.concurrent.Promise;

/**
 * A posted receive ({@code ucp_tag_recv_nbx}): a tag and mask, the user's buffer or none, and the promise that gets
 * the message. Once data start going into its buffer it cannot be cancelled ({@link #claim()}).
 */
public final class TagReceive {

    private final long tag;
    private final long mask;
    private final ByteBuf into;
    private final Promise<TagMessage> promise;
    long sn;

    /**
     * @param into the buffer to write the message into (its writable bytes are the limit), or null to allocate
     */
    public TagReceive(long tag, long mask, ByteBuf into, Promise<TagMessage> promise) {
        this.tag = tag;
        this.mask = mask;
        this.into = into;
        this.promise = promise;
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

    public Promise<TagMessage> promise() {
        return promise;
    }

    boolean matches(long incoming) {
        return ((incoming ^ tag) & mask) == 0;
    }

    /** Cancelled or otherwise over while it waited. */
    boolean isDone() {
        return promise.isDone();
    }

    /**
     * Data go into this receive's buffer from now on: it can no longer be cancelled. False if it was cancelled first
     * (its buffer is the user's again and must not be touched).
     */
    public boolean claim() {
        return promise.setUncancellable();
    }

    /** Whether a message of {@code size} bytes fits (always, without a buffer of the user's). */
    public boolean fits(long size) {
        return into == null || size <= into.writableBytes();
    }

    /** Fails with {@link MessageTruncatedException} for a message of {@code tag} and {@code size} bytes. */
    public void truncated(long msgTag, long size) {
        promise.tryFailure(new MessageTruncatedException(msgTag, size, into.writableBytes()));
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
        into.writerIndex(into.writerIndex() + data.writerIndex());
        complete(new TagMessage(msgTag, data));
    }

    /** Completes with {@code data}, copied into the user's buffer if there is one. Owns {@code data}. */
    public void deliver(long msgTag, ByteBuf data) {
        if (into == null) {
            complete(new TagMessage(msgTag, data));
            return;
        }
        try {
            int n = data.readableBytes();
            if (n > into.writableBytes()) {
                truncated(msgTag, n);
                return;
            }
            if (!claim()) {
                return; // cancelled from another thread just now: its buffer is the user's again, leave it alone
            }
            int start = into.writerIndex();
            into.writeBytes(data, data.readerIndex(), n);
            complete(new TagMessage(msgTag, into.retainedSlice(start, n)));
        } finally {
            data.release();
        }
    }

    private void complete(TagMessage m) {
        if (!promise.trySuccess(m)) {
            m.release(); // cancelled meanwhile
        }
    }

    public void fail(Throwable cause) {
        promise.tryFailure(cause);
    }
}
