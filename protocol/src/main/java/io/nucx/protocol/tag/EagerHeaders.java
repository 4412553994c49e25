package io.nucx.protocol.tag;

/**
 * Header layouts of the eager tag protocol, as UCX's (research/ucx-internals.md §4); all little-endian. The tag
 * comes first in every header that starts a message, so one matcher serves every protocol.
 *
 * <pre>
 * EAGER_ONLY    +----------------+
 *               |    tag:u64     |  + payload
 *               +----------------+
 * EAGER_FIRST   +----------------+----------------+----------------+
 *               |    tag:u64     | total len:u64  | message id:u64 |  + first payload bytes
 *               +----------------+----------------+----------------+
 * EAGER_MIDDLE  +----------------+----------------+
 *               | message id:u64 |   offset:u64   |  + payload bytes at offset
 *               +----------------+----------------+
 * EAGER_SYNC_ONLY / EAGER_SYNC_FIRST: the ONLY / FIRST header followed by {@code sender request id:u64}; the
 * receiver answers EAGER_SYNC_ACK {@code sender request id:u64, status:i8} when a receive has matched it.
 * EAGER_ZCOPY_ONLY / EAGER_ZCOPY_FIRST: the same layouts as the synchronous ones (the payload is the sender's own
 * buffer); the receiver answers EAGER_ZCOPY_ACK {@code sender request id:u64} once the whole message has arrived.
 * </pre>
 */
public final class EagerHeaders {
    public static final int ONLY_LENGTH = 8;
    public static final int FIRST_LENGTH = 24;
    public static final int MIDDLE_LENGTH = 16;
    /** EAGER_SYNC_ONLY: the EAGER_ONLY header plus the sender's request id. */
    public static final int SYNC_ONLY_LENGTH = 16;
    /** EAGER_SYNC_FIRST: the EAGER_FIRST header plus the sender's request id. */
    public static final int SYNC_FIRST_LENGTH = 32;
    /** EAGER_SYNC_ACK: sender request id, status. */
    public static final int SYNC_ACK_LENGTH = 9;
    /** EAGER_ZCOPY_ONLY: the EAGER_ONLY header plus the sender's request id. */
    public static final int ZCOPY_ONLY_LENGTH = 16;
    /** EAGER_ZCOPY_FIRST: the EAGER_FIRST header plus the sender's request id. */
    public static final int ZCOPY_FIRST_LENGTH = 32;
    /** EAGER_ZCOPY_ACK: sender request id. */
    public static final int ZCOPY_ACK_LENGTH = 8;

    public static final int TAG_OFFSET = 0;
    public static final int FIRST_TOTAL_OFFSET = 8;
    public static final int FIRST_MSG_ID_OFFSET = 16;
    public static final int MIDDLE_MSG_ID_OFFSET = 0;
    public static final int MIDDLE_OFFSET_OFFSET = 8;

    private EagerHeaders() {
    }
}
