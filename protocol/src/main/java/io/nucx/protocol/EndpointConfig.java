package io.nucx.protocol;

import io.nucx.transport.IfaceAttributes;

/**
 * What the protocols of one endpoint need to know about its lanes, whatever chose them: the AM lane's transport name
 * and attributes, and the RMA lane's when there is one the kernel lets us use (cma to a peer on this host). Endpoints
 * with equal configurations behave alike.
 *
 * @param amLane       "transport/device" of the AM lane, for tables and logs
 * @param amLaneAttrs  the AM lane's iface attributes (the smaller of the local and remote limits)
 * @param rmaLane      "transport/device" of the RMA lane that can GET the peer's memory, or null
 * @param rmaLaneAttrs its attributes, or null
 */
public record EndpointConfig(String amLane, IfaceAttributes amLaneAttrs, String rmaLane,
                             IfaceAttributes rmaLaneAttrs) {

    /** A configuration with an AM lane only. */
    public EndpointConfig(String amLane, IfaceAttributes amLaneAttrs) {
        this(amLane, amLaneAttrs, null, null);
    }

    public EndpointConfig {
        if ((rmaLane == null) != (rmaLaneAttrs == null)) {
            throw new IllegalArgumentException("RMA lane name and attributes go together (" + rmaLane + ")");
        }
    }

    /** Whether an RMA lane is there to read the peer's memory. */
    public boolean hasRmaLane() {
        return rmaLane != null;
    }
}
