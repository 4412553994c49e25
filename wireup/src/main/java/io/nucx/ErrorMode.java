package io.nucx;

import io.nucx.protocol.ProtocolException;

/**
 * An endpoint's error handling (UCX's {@code ucp_err_handling_mode_t}), carried in the wireup header so that the
 * accepting side takes the connecting side's mode.
 */
public enum ErrorMode {
    /** No keepalive; a lost peer is noticed only when its connection closes. */
    NONE(0),
    /**
     * Keepalive on the keepalive lane (wireup EP_CHECK every NUCX_KEEPALIVE_INTERVAL); a peer silent for
     * NUCX_KEEPALIVE_TIMEOUT fails the endpoint with {@link EndpointTimeoutException}. Lanes must handle peer failure.
     */
    PEER(1),
    /**
     * As {@link #PEER}, and a lane that fails while others remain (or another transport can replace it) does not fail
     * the endpoint: frames are kept until the peer confirms them, and what the lost lane had not delivered is sent
     * again on the lane that takes over (UCX's UCP_ERR_HANDLING_MODE_FAILOVER names the idea). A send completes when the peer confirmed it.
     */
    FAILOVER(2);

    private final int wire;

    ErrorMode(int wire) {
        this.wire = wire;
    }

    /** The value in the wireup header's err_mode byte (UCP_ERR_HANDLING_MODE_*). */
    public int wire() {
        return wire;
    }

    public static ErrorMode fromWire(int value) {
        for (ErrorMode m : values()) {
            if (m.wire == value) {
                return m;
            }
        }
        throw new ProtocolException("wireup message with unknown error mode " + value);
    }
}
