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
 * </pre>
 */
public final class EagerHeaders {
    public static final int ONLY_LENGTH = 8;
    public static final int FIRST_LENGTH = 24;
    public static final int MIDDLE_LENGTH = 16;

    public static final int TAG_OFFSET = 0;
    public static final int FIRST_TOTAL_OFFSET = 8;
    public static final int FIRST_MSG_ID_OFFSET = 16;
    public static final int MIDDLE_MSG_ID_OFFSET = 0;
    public static final int MIDDLE_OFFSET_OFFSET = 8;

    private EagerHeaders() {
    }
}
