package io.nucx.protocol;

/**
 * The bounds a peer cannot make a worker exceed on the receive side, parsed once when the worker starts.
 *
 * @param endpointBytes receive memory one endpoint's peer may hold that no posted receive owns (NUCX_RX_EP_BYTES)
 * @param workerBytes   the same over all the worker's endpoints (NUCX_RX_WORKER_BYTES)
 * @param replyBacklog  requests of one endpoint whose answers wait for its lane to take them, and atomics a sender
 *                      keeps unanswered on one endpoint (NUCX_REPLY_BACKLOG)
 */
public record ReceiveLimits(long endpointBytes, long workerBytes, int replyBacklog) {

    public static final String EP_BYTES = "NUCX_RX_EP_BYTES";
    public static final String WORKER_BYTES = "NUCX_RX_WORKER_BYTES";
    public static final String REPLY_BACKLOG = "NUCX_REPLY_BACKLOG";

    /** No bounds: tools, and tests of other things. */
    public static final ReceiveLimits NONE = new ReceiveLimits(Long.MAX_VALUE, Long.MAX_VALUE, Integer.MAX_VALUE);
}
