package io.nucx.transport.shm;

/**
 * A record in the ring: an 8-byte header, the payload, padding to 8 bytes (after Agrona's {@code RecordDescriptor}).
 *
 * <pre>
 *  +---------------------------------------------------------------+
 *  |  length i32 (header + payload; 0 = not yet written)           |
 *  +---------------------------------------------------------------+
 *  |  type i32 ({@link #PADDING_TYPE} at the wrap, {@link #FILLER_TYPE}) |
 *  +---------------------------------------------------------------+
 *  |  payload ...                                                   |
 * </pre>
 * The producer writes type and payload first and the length last, with release semantics; the consumer reads the
 * length with acquire semantics, so a non-zero length guarantees the rest is visible.
 *
 * <p>A filler ({@link #FILLER_TYPE}: a header alone, 8 to 24 bytes) may precede a record whose payload the producer
 * places at its source's address modulo {@link #PAYLOAD_ALIGNMENT}; the consumer skips it.
 */
public final class RecordDescriptor {
    public static final int HEADER_LENGTH = 8;
    public static final int ALIGNMENT = 8;
    public static final int LENGTH_OFFSET = 0;
    public static final int TYPE_OFFSET = 4;
    /** Fills the end of the record area when a record would not fit before the wrap. */
    public static final int PADDING_TYPE = -1;
    /** Shifts the next record so that its payload lies where its source lay modulo {@link #PAYLOAD_ALIGNMENT}. */
    public static final int FILLER_TYPE = -2;
    /**
     * A large payload is placed at its source's address modulo this. Handed from one core to the other through a
     * ring-like region, 64 KiB records whose copies lay 8, 16 or 24 bytes off their source's place in a 32-byte line
     * moved at 0.80 of the rate of ones that lay on it (19 against 23.6 GB/s in this machine's slow mode; 0.97 in its
     * fast one); in one core's cache a copy 8 or 24 bytes off ran at 40 against 54 GB/s (BENCHMARKS.md). Aeron aligns
     * its frames to 32 bytes too.
     */
    public static final int PAYLOAD_ALIGNMENT = 32;

    private RecordDescriptor() {
    }

    static int aligned(int length) {
        return (length + ALIGNMENT - 1) & -ALIGNMENT;
    }
}
