package io.nucx.transport.shm;

/**
 * Layout of a single-producer single-consumer ring in a shared file (after Agrona's {@code RingBufferDescriptor}
 * and Aeron's {@code CncFileDescriptor}): a header, the record area, then a trailer whose counters each own a
 * 128-byte stretch so the producer's and the consumer's writes never share a cache line (or its neighbour, for the
 * adjacent-line prefetcher).
 *
 * <pre>
 *  0                      HEADER_LENGTH              HEADER_LENGTH + capacity
 *  +----------------------+--------------------------+-----------------------------------------------------------+
 *  | magic u64, version   |  records (capacity bytes,|  tail u64 (producer) | head u64 (consumer) | consumer      |
 *  | u32, capacity u32    |  a power of two)         |  128 B               | 128 B               | sleeping u32, |
 *  |                      |                          |                      |                     | consumer polls|
 *  |                      |                          |                      |                     | u32 at +64:   |
 *  |                      |                          |                      |                     | 128 B; writer |
 *  |                      |                          |                      |                     | waiting u32,  |
 *  |                      |                          |                      |                     | producer polls|
 *  |                      |                          |                      |                     | u32 at +64:   |
 *  |                      |                          |                      |                     | 128 B         |
 *  +----------------------+--------------------------+-----------------------------------------------------------+
 * </pre>
 * Positions only grow; a position's index in the record area is {@code position & (capacity - 1)}. The two "polls"
 * words are written once, by a side whose loop never parks; the sleeping and waiting words next to them only by a
 * side about to park, so a ring between two busy-polling loops never writes either line after set-up.
 */
public final class RingDescriptor {

    /** "NUCXRING" in ASCII, read as a little-endian long. */
    public static final long MAGIC = 0x474E495258435555L;
    /** Layout version; a file of another version is refused (5: records may be preceded by fillers). */
    public static final int VERSION = 5;
    public static final int HEADER_LENGTH = 128;
    public static final int MAGIC_OFFSET = 0;
    public static final int VERSION_OFFSET = 8;
    public static final int CAPACITY_OFFSET = 12;
    /** Each counter's own stretch of the trailer. */
    public static final int COUNTER_PAD = 128;
    public static final int TAIL_OFFSET = 0;
    public static final int HEAD_OFFSET = COUNTER_PAD;
    /** Set by a consumer about to park; the producer rings the doorbell when it finds it set. */
    public static final int SLEEPING_OFFSET = 2 * COUNTER_PAD;
    /**
     * Set once by a consumer whose loop never parks (busy-poll): the producer need not look for {@link #SLEEPING_OFFSET}
     * after publishing, nor pay the full fence that look needs. Its own cache line, next to the sleeping flag.
     */
    public static final int CONSUMER_POLLS_OFFSET = SLEEPING_OFFSET + 64;
    /** Set by a producer that found the ring full; the consumer rings the doorbell once it has made room. */
    public static final int WRITER_WAITING_OFFSET = 3 * COUNTER_PAD;
    /** Set once by a producer whose loop never parks: the consumer need not look for {@link #WRITER_WAITING_OFFSET}. */
    public static final int PRODUCER_POLLS_OFFSET = WRITER_WAITING_OFFSET + 64;
    public static final int TRAILER_LENGTH = 4 * COUNTER_PAD;

    private RingDescriptor() {
    }

    /** Bytes a file for a ring of {@code capacity} takes. */
    public static long fileLength(int capacity) {
        checkCapacity(capacity);
        return HEADER_LENGTH + (long) capacity + TRAILER_LENGTH;
    }

    public static void checkCapacity(int capacity) {
        if (capacity < 1024 || Integer.bitCount(capacity) != 1) {
            throw new IllegalArgumentException("ring capacity must be a power of two of at least 1024, got "
                    + capacity);
        }
    }
}
