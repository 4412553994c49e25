package io.nucx.protocol.tag;

/**
 * Header layouts of the rendezvous protocol over active messages (UCX's {@code rndv/am}), little-endian.
 *
 * <pre>
 * RNDV_RTS   +----------------+--------------------+----------------+
 *            |    tag:u64     | sender req id:u64  |   size:u64     |
 *            +----------------+--------------------+----------------+
 * RNDV_RTR   +--------------------+----------------------+----------------+
 *            | sender req id:u64  | receiver req id:u64  |   size:u64     |
 *            +--------------------+----------------------+----------------+
 * RNDV_DATA  +----------------------+----------------+
 *            | receiver req id:u64  |   offset:u64   |  + payload bytes at offset
 *            +----------------------+----------------+
 * RNDV_ATS   +--------------------+-----------+
 *            | sender req id:u64  | status:i8 |   (0 ok, -9 truncated: the receive buffer was smaller)
 *            +--------------------+-----------+
 * </pre>
 * The tag comes first in RTS, as in the eager headers, so one matcher serves both.
 */
public final class RndvHeaders {
    public static final int RTS_LENGTH = 24;
    public static final int RTR_LENGTH = 24;
    public static final int DATA_LENGTH = 16;
    public static final int ATS_LENGTH = 9;

    /** UCS_OK. */
    public static final int STATUS_OK = 0;
    /** UCS_ERR_MESSAGE_TRUNCATED. */
    public static final int STATUS_TRUNCATED = -9;

    private RndvHeaders() {
    }
}
