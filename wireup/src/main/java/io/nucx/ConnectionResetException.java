package io.nucx;

/**
 * UCS_ERR_CONNECTION_RESET: the peer closed its endpoint (a wireup EP_REMOVED), no longer knows ours (EP_REMOVED in
 * answer to EP_CHECK), or its connection went away (process exited or was killed).
 */
public final class ConnectionResetException extends EndpointException {
    public ConnectionResetException(long endpointId, EndpointAddress peer, String reason, Throwable cause) {
        super(endpointId, peer, reason, cause);
    }
}
