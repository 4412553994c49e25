package io.nucx.protocol;

import io.nucx.transport.IfaceAttributes;

import java.util.List;

/**
 * What the protocols of one endpoint need to know about its lanes, whatever chose them: the AM lane's transport name
 * and attributes, the RMA lane's when there is one the kernel lets us use (cma to a peer on this host), and the AM_BW
 * lanes that share rendezvous data with the AM lane. Endpoints with equal configurations behave alike.
 *
 * @param amLane       "transport/device" of the AM lane, for tables and logs
 * @param amLaneAttrs  the AM lane's iface attributes (the smaller of the local and remote limits)
 * @param rmaLane      "transport/device" of the RMA lane that can GET the peer's memory, or null
 * @param rmaLaneAttrs its attributes, or null
 * @param bwLanes      the AM_BW lanes besides the AM lane (lanes 1, 2...), empty for one lane
 */
public record EndpointConfig(String amLane, IfaceAttributes amLaneAttrs, String rmaLane,
                             IfaceAttributes rmaLaneAttrs, List<BwLane> bwLanes) {

    /** An AM_BW lane: its name and attributes (limits the tighter of both sides'). */
    public record BwLane(String name, IfaceAttributes attrs) {
    }

    /** A configuration with an AM lane only. */
    public EndpointConfig(String amLane, IfaceAttributes amLaneAttrs) {
        this(amLane, amLaneAttrs, null, null, List.of());
    }

    /** A configuration with an AM lane and an RMA lane (or none). */
    public EndpointConfig(String amLane, IfaceAttributes amLaneAttrs, String rmaLane, IfaceAttributes rmaLaneAttrs) {
        this(amLane, amLaneAttrs, rmaLane, rmaLaneAttrs, List.of());
    }

    public EndpointConfig {
        if ((rmaLane == null) != (rmaLaneAttrs == null)) {
            throw new IllegalArgumentException("RMA lane name and attributes go together (" + rmaLane + ")");
        }
        bwLanes = List.copyOf(bwLanes);
    }

    /** Whether an RMA lane is there to read the peer's memory. */
    public boolean hasRmaLane() {
        return rmaLane != null;
    }

    /** The AM lane's bandwidth plus every AM_BW lane's: what a transfer spread over all of them can reach. */
    public double messageBandwidth() {
        double sum = amLaneAttrs.bandwidth();
        for (BwLane l : bwLanes) {
            sum += l.attrs().bandwidth();
        }
        return sum;
    }

    /** "shm/memory + tcp/eth0": the lanes rendezvous data is spread over, for tables. */
    public String messageLanes() {
        StringBuilder b = new StringBuilder(amLane);
        for (BwLane l : bwLanes) {
            b.append(" + ").append(l.name());
        }
        return b.toString();
    }

    /** The largest frame (header included) every message lane can carry: rendezvous fragments fit all of them. */
    public int minMaxBcopy() {
        int min = amLaneAttrs.maxBcopy();
        for (BwLane l : bwLanes) {
            min = Math.min(min, l.attrs().maxBcopy());
        }
        return min;
    }
}
