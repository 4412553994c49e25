/**
 * The RMA API (UCP's {@code ucp_put_nbx}, {@code ucp_get_nbx}, {@code ucp_ep_flush_nbx}, {@code ucp_ep_fence}): put
 * and get on memory a peer registered ({@code Worker.registerMemory}, whose key carries a transport key per RMA device
 * of the owner), flush and fence, run by {@link io.nucx.protocol.rma.RmaCodec} over the endpoint's RMA lanes (cma,
 * rdma; split over several rails in proportion to bandwidth). {@code RmaRequest} is what the API writes.
 */
package io.nucx.protocol.rma;
