package io.nucx.transport.shm;

/**
 * A record in the ring: an 8-byte header, the payload, padding to 8 bytes (after Agrona's {@code RecordDescriptor}).
 *
 * <pre>
 *  +---------------------------------------------------------------+
 *  |  length i32 (header + payload; 0 = not yet written)           |
 *  +---------------------------------------------------------------+
 *  |  type i32 ({@link #PADDING_TYPE} for the filler at the wrap)   |
 *  +---------------------------------------------------------------+
 *  |  payload ...                                                   |
 * </pre>
 * The producer writes type and payload first and the length last, with release semantics; the consumer reads the
 * length with acquire semantics, so a non-zero length guarantees the rest is visible.
 */
public final class RecordDescriptor {
    public static final int HEADER_LENGTH = 8;
    public static final int ALIGNMENT = 8;
    public static final int LENGTH_OFFSET = 0;
    public static final int TYPE_OFFSET = 4;
    /** Fills the end of the record area when a record would not fit before the wrap. */
    public static final int PADDING_TYPE = -1;

    private RecordDescriptor() {
    }

    static int aligned(int length) {
        return (length + ALIGNMENT - 1) & -ALIGNMENT;
    }
}
