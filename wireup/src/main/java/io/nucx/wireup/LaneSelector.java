package io.nucx.wireup;

import io.nucx.ErrorMode;
import io.nucx.UnreachableException;
import io.nucx.WorkerAddress;
import io.nucx.protocol.EndpointConfig;
import io.nucx.protocol.select.SelectionKey;
import io.nucx.transport.Capability;
import io.nucx.transport.Iface;

import java.util.ArrayList;
import java.util.List;

/**
 * Chooses lanes from the two workers' addresses with UCX's scores (src/ucp/wireup/select.c), so that both peers,
 * running this on the same two addresses, choose the same lanes.
 *
 * <p>AM lane, "best for short messages": {@code score = 1e-3 / (latency + local overhead + remote overhead)}, where
 * latency is the mean of both sides' latency. Ties go to the higher priority sum, then to the transport name.
 * Requires AM_BCOPY on both sides and a max bcopy of at least 64 bytes, and the local iface must reach the remote one.
 *
 * <p>RMA lane ({@code rndv/get/zcopy} reads the peer's memory through it), UCX's RMA_BW score "best for 256 KiB":
 * {@code score = 1 / (256 KiB / min bandwidth + latency + mean overhead)} (UCX takes the local overhead, which
 * differs from each side); requires GET_ZCOPY on both sides and reachability, then the transport's own permission
 * check ({@link Iface#accessRefusal}: cma asks the kernel whether we may read the peer). A refused lane is not used, and the refusal is kept as a reason. Each side decides for
 * itself, because the kernel may let one process read the other but not the reverse: the reading side (the receiver
 * of a rendezvous) asks for the data by RTR when it may not read, and a sender that may not write answers an RTR
 * offering the receive buffer ({@code rndv/put/zcopy}) with fragments. The kernel checks reads and writes alike, so
 * the probe's read stands for both; PUT also needs PUT_ZCOPY in both entries, checked where it is used.
 */
public final class LaneSelector {

    /** UCX rejects an AM lane that cannot carry 64 bytes in one bcopy. */
    static final int MIN_AM_BCOPY = 64;

    /** The chosen AM lane: which local iface talks to which remote entry, and why. */
    public record Lane(Iface iface, WorkerAddress.Entry local, WorkerAddress.Entry remote, double score) {
        /** "tcp/lo" style name. */
        public String name() {
            return iface.transport().name() + "/" + iface.device().name();
        }

        /**
         * Whether the lane connects endpoint to endpoint: both sides offer CONNECT_TO_EP (tcp with
         * NUCX_TCP_CONNECT=p2p). It is then a stub until a REQUEST/REPLY/ACK exchange on an auxiliary lane, the same
         * transport connected to the peer's iface. Decided from the two entries only, so both peers agree.
         */
        public boolean p2p() {
            return local.has(Capability.CONNECT_TO_EP) && remote.has(Capability.CONNECT_TO_EP);
        }

        /** The tighter of the two sides' limits. */
        public int maxShort() {
            return Math.min(local.maxShort(), remote.maxShort());
        }

        public int maxBcopy() {
            return Math.min(local.maxBcopy(), remote.maxBcopy());
        }

        /** What the protocols of an endpoint on this lane work with: its name and the tighter of both limits. */
        public EndpointConfig endpointConfig() {
            return new EndpointConfig(name(), iface.attributes().withAmLimits(maxShort(), maxBcopy()));
        }

        /** Where the peer is, for selection keys: self in this process, otherwise across a network. */
        public SelectionKey.Locality locality() {
            return iface.transport().name().equals("self") ? SelectionKey.Locality.SELF
                    : SelectionKey.Locality.INTER_NODE;
        }
    }

    /** The chosen RMA lane. */
    public record RmaLane(Iface iface, WorkerAddress.Entry local, WorkerAddress.Entry remote, double score) {
        public String name() {
            return iface.transport().name() + "/" + iface.device().name();
        }
    }

    /**
     * Every lane of an endpoint.
     *
     * @param am         the AM lane (lane 0)
     * @param rma        the RMA lane, or null
     * @param rmaRefusal why there is no RMA lane although a transport offered one (refused by the kernel, another
     *                   host), or null
     * @param keepalive  the lane EP_CHECK goes on (error modes peer and failover), or null (error mode none): the AM
     *                   lane, which in those modes must handle peer failure
     * @param bw         the AM_BW lanes besides the AM lane (lanes 1, 2...), best first: rendezvous data is spread
     *                   over the AM lane and these in proportion to their bandwidth; empty when one lane suffices
     */
    public record Lanes(Lane am, RmaLane rma, String rmaRefusal, Lane keepalive, List<Lane> bw) {
        public Lanes(Lane am, RmaLane rma, String rmaRefusal, Lane keepalive) {
            this(am, rma, rmaRefusal, keepalive, List.of());
        }

        public Lanes {
            bw = List.copyOf(bw);
        }

        /** The configuration the protocols see: every lane's name and attributes. */
        public EndpointConfig endpointConfig() {
            EndpointConfig amOnly = am.endpointConfig();
            List<EndpointConfig.BwLane> extra = bw.stream().map(l -> new EndpointConfig.BwLane(l.name(),
                    l.endpointConfig().amLaneAttrs())).toList();
            return new EndpointConfig(amOnly.amLane(), amOnly.amLaneAttrs(), rma == null ? null : rma.name(),
                    rma == null ? null : rma.iface().attributes(), extra);
        }

        public SelectionKey.Locality locality() {
            return am.locality();
        }

        /** Lane {@code index}: 0 the AM lane, then the AM_BW lanes. */
        public Lane lane(int index) {
            return index == 0 ? am : bw.get(index - 1);
        }

        /** How many message lanes (AM + AM_BW). */
        public int count() {
            return 1 + bw.size();
        }

        /** "tcp/lo; rma cma/memory; keepalive tcp/lo" or "tcp/lo; no rma lane: why" for tables and logs. */
        public String describe() {
            StringBuilder b = new StringBuilder(am.name()).append(am.p2p() ? " (p2p)" : "");
            for (Lane l : bw) {
                b.append(" + ").append(l.name());
            }
            return b + (rma != null ? "; rma " + rma.name()
                    : rmaRefusal != null ? "; no rma lane: " + rmaRefusal : "")
                    + (keepalive != null ? "; keepalive " + keepalive.name() : "");
        }
    }

    /**
     * How many message lanes an endpoint may use and how slow the slowest may be (NUCX_MAX_RNDV_LANES,
     * NUCX_MULTI_LANE_MAX_RATIO).
     *
     * @param maxLanes lanes for rendezvous data, the AM lane included (1: no AM_BW lanes)
     * @param maxRatio a lane whose bandwidth is below the fastest chosen lane's divided by this is not used
     */
    public record BwLimits(int maxLanes, double maxRatio) {
        /** No AM_BW lanes. */
        public static final BwLimits SINGLE = new BwLimits(1, 1);
    }

    /** UCX's RMA_BW score is computed for this size. */
    static final double RMA_BW_SIZE = 256 * 1024;

    private LaneSelector() {
    }

    /** {@link #selectLanes(List, WorkerAddress, WorkerAddress, ErrorMode, List)} in error mode none, untraced. */
    public static Lanes selectLanes(List<Iface> ifaces, WorkerAddress local, WorkerAddress remote) {
        return selectLanes(ifaces, local, remote, ErrorMode.NONE, BwLimits.SINGLE, null);
    }

    /** {@link #selectLanes(List, WorkerAddress, WorkerAddress, ErrorMode, BwLimits, List)} with one message lane. */
    public static Lanes selectLanes(List<Iface> ifaces, WorkerAddress local, WorkerAddress remote, ErrorMode mode,
                                    List<String> trace) {
        return selectLanes(ifaces, local, remote, mode, BwLimits.SINGLE, trace);
    }

    /**
     * Selects the AM lane ({@link #selectAmLane}), the AM_BW lanes ({@link #selectBwLanes}), where one is reachable
     * and permitted the RMA lane, and in error modes peer and failover the keepalive lane.
     *
     * @param trace if not null, receives one line per candidate: criterion, pair, score and verdict (for
     *              {@code nucx info --lanes})
     */
    public static Lanes selectLanes(List<Iface> ifaces, WorkerAddress local, WorkerAddress remote, ErrorMode mode,
                                    BwLimits limits, List<String> trace) {
        Lane am = selectAmLane(ifaces, local, remote, mode, java.util.Set.of(), trace);
        traceAmo(ifaces, local, remote, trace);
        List<Lane> bw = selectBwLanes(ifaces, local, remote, mode, am, limits, trace);
        RmaLane best = null;
        List<String> refusals = new ArrayList<>();
        List<RmaLane> candidates = new ArrayList<>();
        for (int i = 0; i < ifaces.size(); i++) {
            Iface iface = ifaces.get(i);
            WorkerAddress.Entry l = local.entries().get(i);
            if (!l.has(Capability.GET_ZCOPY)) {
                continue;
            }
            for (WorkerAddress.Entry r : remote.entries()) {
                if (!r.transport().equals(l.transport())) {
                    continue;
                }
                if (!r.has(Capability.GET_ZCOPY)) {
                    note(trace, "rma", l, r, Double.NaN, "peer has no GET_ZCOPY");
                    continue;
                }
                if (!iface.isReachable(r.deviceAddress(), r.ifaceAddress())) {
                    refusals.add(r.transport() + ": unreachable from " + iface + " (another host)");
                    note(trace, "rma", l, r, Double.NaN, "unreachable from " + iface + " (another host)");
                    continue;
                }
                candidates.add(new RmaLane(iface, l, r, rmaBwScore(l, r)));
            }
        }
        // Best first; ask the kernel only about the ones we would use.
        candidates.sort((a, b) -> a.score() != b.score() ? Double.compare(b.score(), a.score())
                : a.local().transport().compareTo(b.local().transport()));
        for (RmaLane c : candidates) {
            if (best != null) {
                note(trace, "rma", c.local(), c.remote(), c.score(), "lower score than " + best.name());
                continue;
            }
            String refusal = c.iface().accessRefusal(c.remote().deviceAddress(), c.remote().ifaceAddress());
            if (refusal == null) {
                best = c;
                note(trace, "rma", c.local(), c.remote(), c.score(), "CHOSEN: RMA lane " + c.name()
                        + " (rndv/get/zcopy reads through it)");
            } else {
                refusals.add(refusal);
                note(trace, "rma", c.local(), c.remote(), c.score(), "refused: " + refusal);
            }
        }
        Lane keepalive = mode != ErrorMode.NONE ? am : null;
        if (trace != null) {
            trace.add(keepalive != null ? "keepalive  " + am.name() + ": the AM lane (error mode "
                    + mode.name().toLowerCase(java.util.Locale.ROOT) + ": it handles peer failure; EP_CHECK goes on "
                    + "it every NUCX_KEEPALIVE_INTERVAL)" : "keepalive  none (error mode none)");
        }
        return new Lanes(am, best, best == null && !refusals.isEmpty() ? String.join("; ", refusals) : null,
                keepalive, bw);
    }

    /**
     * UCX's AMO criterion comes before RMA: a transport with device atomics (ATOMIC64 on both sides). None here has
     * them, so nucx runs atomics as active messages on the AM lane ({@code amo/am}, UCX's software atomics); the trace
     * says which it found.
     */
    private static void traceAmo(List<Iface> ifaces, WorkerAddress local, WorkerAddress remote, List<String> trace) {
        if (trace == null) {
            return;
        }
        List<String> device = new ArrayList<>();
        for (int i = 0; i < ifaces.size(); i++) {
            WorkerAddress.Entry l = local.entries().get(i);
            for (WorkerAddress.Entry r : remote.entries()) {
                if (r.transport().equals(l.transport()) && l.has(Capability.ATOMIC64) && r.has(Capability.ATOMIC64)
                        && ifaces.get(i).isReachable(r.deviceAddress(), r.ifaceAddress())) {
                    device.add(l.transport());
                }
            }
        }
        trace.add(device.isEmpty() ? "amo        none: no transport has device atomics (ATOMIC64) on both sides; "
                + "atomics go as active messages on the AM lane (amo/am)"
                : "amo        " + device + " offer ATOMIC64, but atomics go as active messages on the AM lane "
                + "(amo/am)");
    }

    private static void note(List<String> trace, String criterion, WorkerAddress.Entry l, WorkerAddress.Entry r,
                             double score, String verdict) {
        if (trace != null) {
            trace.add(String.format(java.util.Locale.ROOT, "%-10s %-6s -> %-6s %-12s %s", criterion, l.transport(),
                    r.transport(), Double.isNaN(score) ? "-" : String.format(java.util.Locale.ROOT, "%.6g", score),
                    verdict));
        }
    }

    /**
     * UCX's {@code ucp_wireup_rma_bw_score_func} without registration cost (cma registers nothing), and with the mean
     * of both sides' overheads where UCX takes the local one: the sender registers its memory on its RMA lane and the
     * receiver reads it through its own, so both must choose the same transport, and with the local overhead alone
     * two transports could rank one way here and the other way at the peer (found by LaneSelectionPropertyTest).
     */
    static double rmaBwScore(WorkerAddress.Entry l, WorkerAddress.Entry r) {
        double bw = Math.min((double) l.bandwidth(), (double) r.bandwidth());
        double latency = ((double) l.latency() + (double) r.latency()) / 2;
        double overhead = ((double) l.overhead() + (double) r.overhead()) / 2;
        return 1 / (RMA_BW_SIZE / bw + latency + overhead);
    }

    /** {@link #selectAmLane(List, WorkerAddress, WorkerAddress, ErrorMode, java.util.Set, List)} in error mode none. */
    public static Lane selectAmLane(List<Iface> ifaces, WorkerAddress local, WorkerAddress remote) {
        return selectAmLane(ifaces, local, remote, ErrorMode.NONE, java.util.Set.of(), null);
    }

    /**
     * Selects the AM lane. In error mode peer both sides must handle peer failure (UCX makes
     * ERRHANDLE_PEER_FAILURE mandatory then).
     *
     * @param ifaces   this worker's ifaces, in the same order as {@code local.entries()}
     * @param excluded transports not to use (lane failover re-selects without the failed ones)
     * @param trace    if not null, receives one line per candidate and its verdict
     * @throws UnreachableException listing every candidate and why it lost, when none fits
     */
    public static Lane selectAmLane(List<Iface> ifaces, WorkerAddress local, WorkerAddress remote, ErrorMode mode,
                                    java.util.Set<String> excluded, List<String> trace) {
        Lane best = null;
        List<String> reasons = new ArrayList<>();
        List<Lane> fitting = new ArrayList<>();
        for (int i = 0; i < ifaces.size(); i++) {
            Iface iface = ifaces.get(i);
            WorkerAddress.Entry l = local.entries().get(i);
            if (excluded.contains(l.transport())) {
                reasons.add(l.transport() + ": failed on this endpoint");
                continue;
            }
            if (!l.has(Capability.AM_BCOPY) || l.maxBcopy() < MIN_AM_BCOPY) {
                reasons.add(l.transport() + ": no AM bcopy of " + MIN_AM_BCOPY + " bytes here");
                if (trace != null) {
                    trace.add(String.format(java.util.Locale.ROOT, "%-10s %-6s %-22s %s", "am", l.transport(), "",
                            "no AM bcopy of " + MIN_AM_BCOPY + " bytes here"));
                }
                continue;
            }
            for (WorkerAddress.Entry r : remote.entries()) {
                if (!r.transport().equals(l.transport())) {
                    continue;
                }
                String why = null;
                if (!r.has(Capability.AM_BCOPY) || r.maxBcopy() < MIN_AM_BCOPY) {
                    why = "peer has no AM bcopy of " + MIN_AM_BCOPY + " bytes";
                } else if (mode != ErrorMode.NONE && !(l.has(Capability.ERRHANDLE_PEER_FAILURE)
                        && r.has(Capability.ERRHANDLE_PEER_FAILURE))) {
                    why = "no peer failure handling " + (l.has(Capability.ERRHANDLE_PEER_FAILURE) ? "at the peer"
                            : "here") + " (needed by error mode peer)";
                } else if (!iface.isReachable(r.deviceAddress(), r.ifaceAddress())) {
                    why = "unreachable from " + iface;
                }
                if (why != null) {
                    reasons.add(r.transport() + ": " + why);
                    note(trace, "am", l, r, Double.NaN, why);
                    continue;
                }
                Lane cand = new Lane(iface, l, r, amScore(l, r));
                fitting.add(cand);
                if (best == null || better(cand, best)) {
                    best = cand;
                }
            }
        }
        if (best == null) {
            List<String> remoteTls = remote.entries().stream().map(WorkerAddress.Entry::transport).toList();
            throw new UnreachableException("no AM transport to " + remote.name() + " (" + Long.toHexString(remote.uuid())
                    + ", offers " + remoteTls + "): " + (reasons.isEmpty() ? "no transport in common" : reasons));
        }
        for (Lane c : fitting) {
            double latency = ((double) c.local().latency() + (double) c.remote().latency()) / 2;
            String formula = String.format(java.util.Locale.ROOT, "= 1e-3 / (latency %.3g s + overheads %.3g + %.3g s)",
                    latency, (double) c.local().overhead(), (double) c.remote().overhead());
            note(trace, "am", c.local(), c.remote(), c.score(), (c == best ? "CHOSEN: AM lane " + c.name() + " "
                    : "lower than " + best.name() + " (score, then priority, then name) ") + formula);
        }
        return best;
    }

    /**
     * UCX's AM_BW lanes: reachable AM transport pairs other than the AM lane's transport, by
     * {@code ucp_wireup_am_bw_score_func} (bytes per time for one max-bcopy fragment), best first, while fewer than
     * {@code limits.maxLanes()} lanes are chosen and each carries at least 1/{@code maxRatio} of the fastest chosen
     * lane's bandwidth (a much slower lane would hold a split transfer back more than it adds). Only lanes that
     * connect to the peer's iface: a p2p AM_BW lane would need its own address exchange.
     */
    static List<Lane> selectBwLanes(List<Iface> ifaces, WorkerAddress local, WorkerAddress remote, ErrorMode mode,
                                    Lane am, BwLimits limits, List<String> trace) {
        List<Lane> candidates = new ArrayList<>();
        for (int i = 0; i < ifaces.size(); i++) {
            Iface iface = ifaces.get(i);
            WorkerAddress.Entry l = local.entries().get(i);
            if (l.transport().equals(am.local().transport()) || !l.has(Capability.AM_BCOPY)
                    || l.maxBcopy() < MIN_AM_BCOPY || !l.has(Capability.CONNECT_TO_IFACE)) {
                continue;
            }
            for (WorkerAddress.Entry r : remote.entries()) {
                if (!r.transport().equals(l.transport()) || !r.has(Capability.AM_BCOPY) || r.maxBcopy() < MIN_AM_BCOPY
                        || !r.has(Capability.CONNECT_TO_IFACE)) {
                    continue;
                }
                if (mode != ErrorMode.NONE && !(l.has(Capability.ERRHANDLE_PEER_FAILURE)
                        && r.has(Capability.ERRHANDLE_PEER_FAILURE))) {
                    note(trace, "am_bw", l, r, Double.NaN, "no peer failure handling (needed by error mode "
                            + mode.name().toLowerCase(java.util.Locale.ROOT) + ")");
                    continue;
                }
                if (!iface.isReachable(r.deviceAddress(), r.ifaceAddress())) {
                    continue; // unreachable pairs are listed by the AM criterion already
                }
                candidates.add(new Lane(iface, l, r, amBwScore(l, r)));
            }
        }
        candidates.sort((a, b) -> a.score() != b.score() ? Double.compare(b.score(), a.score())
                : a.local().transport().compareTo(b.local().transport()));
        List<Lane> chosen = new ArrayList<>();
        double fastest = bandwidth(am);
        for (Lane c : candidates) {
            String verdict;
            if (1 + chosen.size() >= limits.maxLanes()) {
                verdict = "not used: " + limits.maxLanes() + " lane(s) at most (NUCX_MAX_RNDV_LANES)";
            } else if (bandwidth(c) * limits.maxRatio() < Math.max(fastest, bandwidth(c))) {
                verdict = String.format(java.util.Locale.ROOT, "not used: %.0f MB/s is below 1/%.3g of %.0f MB/s "
                        + "(NUCX_MULTI_LANE_MAX_RATIO)", bandwidth(c) / 1e6, limits.maxRatio(), fastest / 1e6);
            } else {
                chosen.add(c);
                fastest = Math.max(fastest, bandwidth(c));
                verdict = "CHOSEN: AM_BW lane[" + chosen.size() + "] " + c.name() + " (rendezvous data shares it)";
            }
            note(trace, "am_bw", c.local(), c.remote(), c.score(), verdict);
        }
        return chosen;
    }

    /** The bandwidth both sides of a lane can give. */
    static double bandwidth(Lane lane) {
        return Math.min((double) lane.local().bandwidth(), (double) lane.remote().bandwidth());
    }

    /** UCX's {@code ucp_wireup_am_bw_score_func}: bytes per second of one max-bcopy fragment, × 1e-5. */
    static double amBwScore(WorkerAddress.Entry l, WorkerAddress.Entry r) {
        double size = Math.min(l.maxBcopy(), r.maxBcopy());
        double latency = ((double) l.latency() + (double) r.latency()) / 2;
        double t = size / Math.min((double) l.bandwidth(), (double) r.bandwidth())
                + ((double) l.overhead() + (double) r.overhead()) + latency;
        return size / t * 1e-5;
    }

    /** UCX's {@code ucp_wireup_am_score_func}. */
    static double amScore(WorkerAddress.Entry l, WorkerAddress.Entry r) {
        double latency = ((double) l.latency() + (double) r.latency()) / 2;
        // Sum the two overheads first: float addition is not associative, and both peers must get the same bits.
        return 1e-3 / (latency + ((double) l.overhead() + (double) r.overhead()));
    }

    private static boolean better(Lane a, Lane b) {
        if (a.score() != b.score()) {
            return a.score() > b.score();
        }
        int pa = a.local().priority() + a.remote().priority();
        int pb = b.local().priority() + b.remote().priority();
        if (pa != pb) {
            return pa > pb;
        }
        return a.local().transport().compareTo(b.local().transport()) < 0;
    }
}
