package io.nucx;

/**
 * Handles the active messages of one id on a worker ({@link Worker#setAmHandler}; UCX's
 * {@code ucp_worker_set_am_recv_handler}). Runs on the worker's event loop: it must not block.
 */
@FunctionalInterface
public interface AmHandler {

    /**
     * An active message arrived. The message is valid during the call; {@link AmMessage#keep()} keeps it (and its
     * data at the sender, for a rendezvous one) until {@link AmMessage#release()}. Whatever this throws is logged and
     * counted; the message is released as if it had returned.
     */
    void onMessage(AmMessage message);
}
