package io.nucx;

import java.io.IOException;

/**
 * An endpoint failed (UCX's endpoint failure statuses); every operation outstanding or queued on it fails with this
 * exception, whose message names the endpoint, the peer and the reason.
 */
public class EndpointException extends IOException {

    private final long endpointId;
    private final EndpointAddress peer;

    public EndpointException(long endpointId, EndpointAddress peer, String reason, Throwable cause) {
        super("endpoint #" + endpointId + " to " + peer + ": " + reason, cause);
        this.endpointId = endpointId;
        this.peer = peer;
    }

    /** The failed endpoint's id within its worker. */
    public long endpointId() {
        return endpointId;
    }

    /** The peer worker (name and uuid). */
    public EndpointAddress peer() {
        return peer;
    }
}
