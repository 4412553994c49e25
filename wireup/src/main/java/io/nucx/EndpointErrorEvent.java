package io.nucx;

/**
 * Fired once through an endpoint's pipeline ({@code userEventTriggered}) when the endpoint fails, before it closes:
 * the peer went away, closed its side, or stopped answering keepalive. Every outstanding operation has already
 * failed with {@link #cause()}; {@link Endpoint#errorFuture()} carries the same cause.
 */
public record EndpointErrorEvent(EndpointException cause) {
}
