package io.nucx;

/**
 * UCS_ERR_ENDPOINT_TIMEOUT: nothing arrived from the peer for NUCX_KEEPALIVE_TIMEOUT although its connection is
 * still open (a hung or stopped process, a lost network), or wireup did not finish in that time.
 */
public final class EndpointTimeoutException extends EndpointException {
    public EndpointTimeoutException(long endpointId, EndpointAddress peer, String reason) {
        super(endpointId, peer, reason, null);
    }
}
