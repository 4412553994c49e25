package io.nucx.protocol;

import io.nucx.transport.IfaceAttributes;

/**
 * What the protocols of one endpoint need to know about its lanes, whatever chose them: for now the AM lane's
 * transport name and attributes. Endpoints with equal configurations behave alike.
 *
 * @param amLane      "transport/device" of the AM lane, for tables and logs
 * @param amLaneAttrs the AM lane's iface attributes (the smaller of the local and remote limits)
 */
public record EndpointConfig(String amLane, IfaceAttributes amLaneAttrs) {
}
