/**
 * Active messages (UCX's {@code ucp_am_send_nbx} / {@code ucp_worker_set_am_recv_handler}): a user header and data
 * sent to a handler the receiving worker registered for the message's id. Carried by the tag eager and rendezvous
 * codecs under their own first-frame ids ({@code MessageKind.AM}); {@link io.nucx.protocol.am.AmCodec} checks sends
 * and hands arrivals to the worker's handlers. Internal: the API is {@code io.nucx.Worker#setAmHandler} and
 * {@code io.nucx.Endpoint#amSend}.
 */
package io.nucx.protocol.am;
