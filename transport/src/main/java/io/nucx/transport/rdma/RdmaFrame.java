package io.nucx.transport.rdma;

/**
 * An active message as one SEND, received whole into one receive buffer (so no length prefix: the completion's
 * byte_len is the length). Little-endian:
 * <pre>
 *  0        1          2                4                 6             8
 *  +--------+----------+----------------+-----------------+-------------+------------------+---------+
 *  | am id  | flags:u8 | header len:u16 | credit grant:u16| reserved:u16| header bytes ... | payload |
 *  +--------+----------+----------------+-----------------+-------------+------------------+---------+
 * </pre>
 * Every frame returns the receives its sender has reposted since its last grant ({@code credit grant}). AM id 0 is
 * never a protocol's: a frame with id 0 carries only a grant (sent when grants pile up and no frame goes the other
 * way to carry them).
 */
final class RdmaFrame {

    static final int HEADER_LENGTH = 8;
    static final int AM_ID = 0;
    static final int FLAGS = 1;
    static final int HEADER_LEN = 2;
    static final int CREDITS = 4;
    /** AM id of a grant-only frame. */
    static final int CREDIT_ONLY = 0;

    private RdmaFrame() {
    }
}
