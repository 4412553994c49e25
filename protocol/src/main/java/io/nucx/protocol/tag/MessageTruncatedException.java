package io.nucx.protocol.tag;

/** A received message was longer than the buffer posted for it (UCS_ERR_MESSAGE_TRUNCATED). */
public final class MessageTruncatedException extends RuntimeException {
    private final long tag;
    private final long length;
    private final long capacity;

    public MessageTruncatedException(long tag, long length, long capacity) {
        super("message with tag 0x" + Long.toHexString(tag) + " is " + length + " bytes; the receive buffer has room for "
                + capacity);
        this.tag = tag;
        this.length = length;
        this.capacity = capacity;
    }

    public long tag() {
        return tag;
    }

    public long length() {
        return length;
    }

    public long capacity() {
        return capacity;
    }
}
