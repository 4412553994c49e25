/**
 * nucx's API: UCX's communication model (workers, endpoints, tagged messages, atomics) on Netty 4.2.
 *
 * <p>Start a {@link io.nucx.Worker} with a {@link io.nucx.NucxBootstrap}, give its {@link io.nucx.WorkerAddress} to
 * peers, and {@link io.nucx.Worker#connect connect} to theirs: an {@link io.nucx.Endpoint} is a Netty
 * {@code Channel} whose pipeline is the protocol stack, so ordinary handlers sit on top. Existing Netty apps use the
 * channel pair instead: {@link io.nucx.NucxServerChannel} and {@link io.nucx.NucxChannel} (socket channels over an
 * endpoint's byte stream, bound and connected by host:port) on a {@link io.nucx.NucxEventLoopGroup}. Failures are
 * {@link io.nucx.EndpointException}s naming the peer and the reason. Everything outside this package (and the value
 * types it returns from {@code io.nucx.protocol}) is internal.
 */
package io.nucx;
