package io.nucx.protocol;

import io.nucx.transport.IfaceAttributes;

import java.util.List;
import java.util.Objects;

/**
 * What the protocols of one endpoint need to know about its lanes, whatever chose them: the AM lane's transport name
 * and attributes, the RMA lanes' when there are some the kernel lets us use (cma to a peer on this host, rdma), and the
 * AM_BW lanes that share rendezvous data with the AM lane. Endpoints with equal configurations behave alike.
 *
 * @param amLane       "transport/device" of the AM lane, for tables and logs
 * @param amLaneAttrs  the AM lane's iface attributes (the smaller of the local and remote limits)
 * @param rmaLane      "transport/device" of the (first) RMA lane that can GET the peer's memory, or null
 * @param rmaLaneAttrs its attributes, or null
 * @param bwLanes      the AM_BW lanes besides the AM lane (lanes 1, 2...), empty for one lane
 * @param rmaBwLanes   the RMA_BW lanes besides the first RMA lane (multi-rail: one rendezvous is split over all of
 *                     them in proportion to bandwidth), empty for one
 * @param rndvSurcharge what a rendezvous over the AM lane costs beyond its figures, as calibration measured it
 *                     ({@link RndvSurcharge#NONE} without a profile that has it)
 * @param eagerSurcharge what a copy send over the AM lane costs beyond its figures, as calibration measured it
 *                     ({@link EagerSurcharge#NONE} without a profile that has it)
 * @param readSurcharge what a rendezvous read by the RMA lane ({@code rndv/get/zcopy}) costs beyond its figures against
 *                     eager's fragments, as calibration measured it; only its part above 0 is charged, to the read
 *                     ({@link RndvSurcharge#NONE} without a profile that has it)
 */
public record EndpointConfig(String amLane, IfaceAttributes amLaneAttrs, String rmaLane,
                             IfaceAttributes rmaLaneAttrs, List<BwLane> bwLanes, List<BwLane> rmaBwLanes,
                             RndvSurcharge rndvSurcharge, EagerSurcharge eagerSurcharge,
                             RndvSurcharge readSurcharge) {

    /** An AM_BW lane: its name and attributes (limits the tighter of both sides'). */
    public record BwLane(String name, IfaceAttributes attrs) {
    }

    /**
     * Bytes below which a transfer is not split over RMA rails: each rail's part is at least this (UCX's
     * {@code MIN_RNDV_CHUNK_SIZE}).
     */
    public static final long MIN_RAIL_PART = 16 * 1024;

    /** A configuration with an AM lane only. */
    public EndpointConfig(String amLane, IfaceAttributes amLaneAttrs) {
        this(amLane, amLaneAttrs, null, null, List.of());
    }

    /** A configuration with an AM lane and an RMA lane (or none). */
    public EndpointConfig(String amLane, IfaceAttributes amLaneAttrs, String rmaLane, IfaceAttributes rmaLaneAttrs) {
        this(amLane, amLaneAttrs, rmaLane, rmaLaneAttrs, List.of());
    }

    /** A configuration with one RMA lane (or none). */
    public EndpointConfig(String amLane, IfaceAttributes amLaneAttrs, String rmaLane, IfaceAttributes rmaLaneAttrs,
                          List<BwLane> bwLanes) {
        this(amLane, amLaneAttrs, rmaLane, rmaLaneAttrs, bwLanes, List.of());
    }

    /** A configuration whose rendezvous costs what its lanes' figures say. */
    public EndpointConfig(String amLane, IfaceAttributes amLaneAttrs, String rmaLane, IfaceAttributes rmaLaneAttrs,
                          List<BwLane> bwLanes, List<BwLane> rmaBwLanes) {
        this(amLane, amLaneAttrs, rmaLane, rmaLaneAttrs, bwLanes, rmaBwLanes, RndvSurcharge.NONE,
                EagerSurcharge.NONE, RndvSurcharge.NONE);
    }

    public EndpointConfig {
        Objects.requireNonNull(rndvSurcharge, "rndvSurcharge");
        Objects.requireNonNull(eagerSurcharge, "eagerSurcharge");
        Objects.requireNonNull(readSurcharge, "readSurcharge");
        if ((rmaLane == null) != (rmaLaneAttrs == null)) {
            throw new IllegalArgumentException("RMA lane name and attributes go together (" + rmaLane + ")");
        }
        if (rmaLane == null && !rmaBwLanes.isEmpty()) {
            throw new IllegalArgumentException("RMA_BW lanes without a first RMA lane: " + rmaBwLanes);
        }
        bwLanes = List.copyOf(bwLanes);
        rmaBwLanes = List.copyOf(rmaBwLanes);
    }

    /** The AM lane's transport, as traffic is counted by: "tcp" of "tcp/lo". */
    public String amTransport() {
        int slash = amLane.indexOf('/');
        return slash < 0 ? amLane : amLane.substring(0, slash);
    }

    /** The RMA lanes' bandwidth summed: what a rendezvous split over all of them reaches (the seed's multi-lane sum). */
    public double rmaBandwidth() {
        return summed(rmaLaneAttrs, rmaBwLanes);
    }

    /** How many RMA lanes (rails) a transfer may be split over. */
    public int rmaRailCount() {
        return rmaLane == null ? 0 : 1 + rmaBwLanes.size();
    }

    /** "rdma/mlx5_0:1 + rdma/mlx5_1:1": the RMA lanes, for tables. */
    public String rmaLanes() {
        return joined(rmaLane, rmaBwLanes);
    }

    /** Whether an RMA lane is there to read the peer's memory. */
    public boolean hasRmaLane() {
        return rmaLane != null;
    }

    /** The AM lane's bandwidth plus every AM_BW lane's: what a transfer spread over all of them can reach. */
    public double messageBandwidth() {
        return summed(amLaneAttrs, bwLanes);
    }

    /** "shm/memory + tcp/eth0": the lanes rendezvous data is spread over, for tables. */
    public String messageLanes() {
        return joined(amLane, bwLanes);
    }

    private static double summed(IfaceAttributes first, List<BwLane> more) {
        double sum = first.bandwidth();
        for (BwLane l : more) {
            sum += l.attrs().bandwidth();
        }
        return sum;
    }

    private static String joined(String first, List<BwLane> more) {
        StringBuilder b = new StringBuilder(first);
        for (BwLane l : more) {
            b.append(" + ").append(l.name());
        }
        return b.toString();
    }

    /**
     * The largest frame (header included) every message lane carries when its receiver places the payload straight
     * into its destination ({@code AmFrame.FLAG_PLACED}, {@link IfaceAttributes#maxPlaced}); 0 when one of them does
     * not place. A receiver offers rendezvous fragments that large only then, and a sender sends them only then.
     */
    public int minMaxPlaced() {
        int min = amLaneAttrs.maxPlaced();
        for (BwLane l : bwLanes) {
            min = Math.min(min, l.attrs().maxPlaced());
        }
        return min;
    }

    /**
     * The same lanes with none placing payloads ({@link #minMaxPlaced} 0): for an endpoint whose lanes are not asked
     * where a payload goes (error mode failover, whose lanes may bring a frame again after a failover), so that its
     * receiver offers, and its model counts, only the fragments its lanes take the ordinary way.
     */
    public EndpointConfig withoutPlacement() {
        return new EndpointConfig(amLane, amLaneAttrs.withMaxPlaced(0), rmaLane, rmaLaneAttrs,
                bwLanes.stream().map(l -> new BwLane(l.name(), l.attrs().withMaxPlaced(0))).toList(), rmaBwLanes,
                rndvSurcharge, eagerSurcharge, readSurcharge);
    }

    /**
     * Whether every message lane leaves the sender's buffer free once a {@code length}-byte payload's write completes
     * ({@link IfaceAttributes#freesPayloadOnWrite}): false when one hands payloads to the receiver as they are (self),
     * so a sender that completes with its writes sends copies there.
     */
    public boolean messageLanesFreePayloadOnWrite(int length, boolean heap) {
        if (!amLaneAttrs.freesPayloadOnWrite(length, heap)) {
            return false;
        }
        for (BwLane l : bwLanes) {
            if (!l.attrs().freesPayloadOnWrite(length, heap)) {
                return false;
            }
        }
        return true;
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
