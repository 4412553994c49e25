/**
 * Internal: UCP's worker and endpoint machinery. The worker ({@code DefaultWorker}) and its ifaces; the endpoint as
 * a child channel over its lanes ({@code EndpointChannel}, one lifecycle enum); wireup ({@code WireupHandler},
 * {@code RequestProcessor}, {@code EndpointMatch}, {@code WireupMessage}); lane selection by UCX's scores
 * ({@code LaneSelector}); the lanes ({@code EndpointLanes}, {@code Lane}, {@code LaneDistributor},
 * {@code FailoverReliability}, {@code LaneDispatcher}, {@code LaneInboundHandler}); keepalive. Not API.
 */
package io.nucx.wireup;
