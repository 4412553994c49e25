package io.nucx.wireup;

import io.nucx.ErrorMode;
import io.nucx.UnreachableException;
import io.nucx.WorkerAddress;
import io.nucx.protocol.EndpointConfig;
import io.nucx.protocol.select.SelectionKey;
import io.nucx.transport.Capability;
import io.nucx.transport.Iface;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * Chooses lanes from the two workers' addresses with UCX's scores (src/ucp/wireup/select.c), so that both peers,
 * running this on the same two addresses, choose the same lanes. A worker has one address entry per device of each
 * transport (two RDMA ports: two rdma entries), and a lane joins one entry of each side.
 *
 * <p>AM lane, "best for short messages": {@code score = 1e-3 / (latency + local overhead + remote overhead)}, where
 * latency is the mean of both sides' latency. Requires AM_BCOPY on both sides and a max bcopy of at least 64 bytes,
 * and the local iface must reach the remote one. A lane that connects endpoint to endpoint only (rdma: no
 * CONNECT_TO_IFACE) is wired up by REQUEST / REPLY on an auxiliary lane of another transport (the <b>wireup lane</b>,
 * UCX's {@code wireup_msg_lane}: the best connect-to-iface AM pair by the same score); without one it cannot be used.
 *
 * <p>RMA lanes, UCX's RMA_BW score "best for 256 KiB": {@code score = 1 / (256 KiB / min bandwidth + mean latency +
 * mean overhead)} (UCX takes the local overhead, which differs from each side, so two peers could rank two RMA
 * transports differently: found by LaneSelectionPropertyTest); requires GET_ZCOPY on both sides and reachability,
 * then the transport's own permission check ({@link Iface#accessRefusal}: cma asks the kernel whether we may read the
 * peer). A refused lane is not used, and the refusal is kept as a reason. Each side decides for itself, because the kernel may let one process read the other but
 * not the reverse: the reading side (the receiver of a rendezvous) asks for the data by RTR when it may not read, and a
 * sender that may not write answers an RTR offering the receive buffer ({@code rndv/put/zcopy}) with fragments. The
 * kernel checks reads and writes alike, so the probe's read stands for both; PUT also needs PUT_ZCOPY in both entries,
 * checked where it is used. <b>Multi-rail</b> (UCX's RMA_BW lanes): after the best, further RMA lanes on devices not
 * used yet on either side, best first, up to NUCX_MAX_RNDV_LANES, none slower than the fastest divided by
 * NUCX_MULTI_LANE_MAX_RATIO; a transfer is then split over them in proportion to bandwidth.
 *
 * <p>AMO lane (device atomics): {@code score = 1e-3 / (latency + local overhead + remote overhead)} over pairs with
 * ATOMIC64 on both sides; atomics the device lacks, or all of them without such a lane, go as active messages.
 *
 * <p><b>Ties</b> go to the higher priority sum, then to the transport name, then to the pair whose device addresses,
 * read from the lower-uuid worker's side first, sort first: both peers see the same two addresses, so they break every
 * tie alike, whichever side they look from.
 */
public final class LaneSelector {

    /** UCX rejects an AM lane that cannot carry 64 bytes in one bcopy. */
    static final int MIN_AM_BCOPY = 64;

    /**
     * A chosen message lane (AM, AM_BW, wireup): which local iface talks to which remote entry, and why.
     *
     * @param localIndex  the local entry's index in this worker's address (its device)
     * @param remoteIndex the remote entry's index in the peer's address
     */
    public record Lane(Iface iface, WorkerAddress.Entry local, WorkerAddress.Entry remote, double score,
                       int localIndex, int remoteIndex) {
        /** "tcp/lo" style name. */
        public String name() {
            return iface.transport().name() + "/" + iface.device().name();
        }

        /**
         * Whether the lane connects endpoint to endpoint: both sides offer CONNECT_TO_EP (rdma; tcp with
         * NUCX_TCP_CONNECT=p2p). It is then a stub until a REQUEST/REPLY/ACK exchange on the wireup lane. Decided from
         * the two entries only, so both peers agree.
         */
        public boolean p2p() {
            return local.has(Capability.CONNECT_TO_EP) && remote.has(Capability.CONNECT_TO_EP);
        }

        /** Whether it can be connected to the peer's iface at once (the wireup lane must). */
        public boolean toIface() {
            return !p2p() || (local.has(Capability.CONNECT_TO_IFACE) && remote.has(Capability.CONNECT_TO_IFACE));
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

        /** The pair of entries, the same key for every role a pair serves. */
        Pair pair() {
            return new Pair(localIndex, remoteIndex);
        }
    }

    /** A chosen RMA or AMO lane. */
    public record RmaLane(Iface iface, WorkerAddress.Entry local, WorkerAddress.Entry remote, double score,
                          int localIndex, int remoteIndex) {
        public String name() {
            return iface.transport().name() + "/" + iface.device().name();
        }

        /** Connected endpoint to endpoint (rdma), so wired up with the endpoint; else connected on first use. */
        public boolean p2p() {
            return local.has(Capability.CONNECT_TO_EP) && remote.has(Capability.CONNECT_TO_EP)
                    && !(local.has(Capability.CONNECT_TO_IFACE) && remote.has(Capability.CONNECT_TO_IFACE));
        }

        /** What both sides can give, the same figure on both. */
        public double bandwidth() {
            return Math.min((double) local.bandwidth(), (double) remote.bandwidth());
        }

        Pair pair() {
            return new Pair(localIndex, remoteIndex);
        }
    }

    /** A pair of address entries, ours and the peer's: one transport connection may serve several roles. */
    record Pair(int local, int remote) {
    }

    /**
     * Every lane of an endpoint.
     *
     * @param am         the AM lane (lane 0)
     * @param rmaLanes   the RMA lanes (RMA_BW, multi-rail), best first; empty when none
     * @param rmaRefusal why there is no RMA lane although a transport offered one (refused by the kernel, another
     *                   host), or null
     * @param keepalive  the lane EP_CHECK goes on (error modes peer and failover), or null (error mode none): the AM
     *                   lane, which in those modes must handle peer failure; an idle rdma lane notices a dead peer only
     *                   when it sends, so EP_CHECK must go on it
     * @param bw         the AM_BW lanes besides the AM lane (lanes 1, 2...), best first: rendezvous data is spread
     *                   over the AM lane and these in proportion to their bandwidth; empty when one lane suffices
     * @param amo        the lane of device atomics (ATOMIC64 on both sides), or null
     * @param wireup     the lane REQUEST and REPLY go on: the AM lane when it connects to the peer's iface, else an
     *                   auxiliary lane of a connect-to-iface transport
     * @param replacements in error mode failover, every lane a failover may connect as a replacement (what
     *                     {@link #selectReplacement} chooses from when nothing has failed yet: the AM lane's
     *                     candidates that connect to the peer's iface): its frames must fit them too; empty in the
     *                     other modes
     */
    public record Lanes(Lane am, List<RmaLane> rmaLanes, String rmaRefusal, Lane keepalive, List<Lane> bw,
                        RmaLane amo, Lane wireup, List<Lane> replacements) {
        public Lanes(Lane am, RmaLane rma, String rmaRefusal, Lane keepalive) {
            this(am, rma == null ? List.of() : List.of(rma), rmaRefusal, keepalive, List.of(), null, am, List.of());
        }

        public Lanes {
            rmaLanes = List.copyOf(rmaLanes);
            bw = List.copyOf(bw);
            replacements = List.copyOf(replacements);
        }

        /** The first (best) RMA lane, or null. */
        public RmaLane rma() {
            return rmaLanes.isEmpty() ? null : rmaLanes.get(0);
        }

        /** The configuration the protocols see: every lane's name and attributes. */
        public EndpointConfig endpointConfig() {
            EndpointConfig amOnly = am.endpointConfig();
            List<EndpointConfig.BwLane> extra = bw.stream().map(l -> new EndpointConfig.BwLane(l.name(),
                    l.endpointConfig().amLaneAttrs())).toList();
            RmaLane rma = rma();
            List<EndpointConfig.BwLane> rails = rmaLanes.stream().skip(1).map(l -> new EndpointConfig.BwLane(l.name(),
                    l.iface().attributes())).toList();
            return new EndpointConfig(amOnly.amLane(), amOnly.amLaneAttrs(), rma == null ? null : rma.name(),
                    rma == null ? null : rma.iface().attributes(), extra, rails);
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

        /** Whether wireup goes on an auxiliary lane of another transport pair than the AM lane's. */
        public boolean auxiliaryWireup() {
            return !wireup.pair().equals(am.pair());
        }

        /**
         * "tcp/lo; rma cma/memory; keepalive tcp/lo" or "tcp/lo; no rma lane: why" for tables and logs; with rdma
         * "rdma/mlx5_0:1 (p2p, wireup tcp/eth0); rma rdma/mlx5_0:1 + rdma/mlx5_1:1; amo rdma/mlx5_0:1; ...".
         */
        public String describe() {
            StringBuilder b = new StringBuilder(am.name());
            if (am.p2p()) {
                b.append(auxiliaryWireup() ? " (p2p, wireup " + wireup.name() + ")" : " (p2p)");
            }
            for (Lane l : bw) {
                b.append(" + ").append(l.name());
            }
            if (!rmaLanes.isEmpty()) {
                b.append("; rma ").append(String.join(" + ", rmaLanes.stream().map(RmaLane::name).toList()));
            } else if (rmaRefusal != null) {
                b.append("; no rma lane: ").append(rmaRefusal);
            }
            if (amo != null) {
                b.append("; amo ").append(amo.name());
            }
            return b + (keepalive != null ? "; keepalive " + keepalive.name() : "");
        }
    }

    /**
     * How many message lanes an endpoint may use and how slow the slowest may be (NUCX_MAX_RNDV_LANES,
     * NUCX_MULTI_LANE_MAX_RATIO). The same limits bound the RMA lanes of multi-rail.
     *
     * @param maxLanes lanes for rendezvous data, the AM lane included (1: no AM_BW lanes; one RMA lane)
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
     * Selects the AM lane ({@link #selectAmLane}) and its wireup lane, the AM_BW lanes ({@link #selectBwLanes}), the
     * RMA lanes that are reachable and permitted, the AMO lane, and in error modes peer and failover the keepalive
     * lane.
     *
     * @param trace if not null, receives one line per candidate: criterion, pair, score and verdict (for
     *              {@code nucx info --lanes})
     */
    public static Lanes selectLanes(List<Iface> ifaces, WorkerAddress local, WorkerAddress remote, ErrorMode mode,
                                    BwLimits limits, List<String> trace) {
        Lane wireupAux = selectWireupLane(ifaces, local, remote, null);
        List<String> amReasons = new ArrayList<>();
        List<Lane> amFitting = amCandidates(ifaces, local, remote, mode, Set.of(), false, wireupAux, amReasons, trace);
        Lane am = chooseAmLane(local, remote, amFitting, amReasons, trace);
        Lane wireup = am.toIface() ? am : wireupAux;
        if (trace != null && am.p2p()) {
            trace.add("wireup     " + wireup.name() + ": " + (wireup == am ? "the AM lane's transport connects to "
                    + "the peer's iface and carries REQUEST / REPLY" : "auxiliary connect-to-iface lane for REQUEST / "
                    + "REPLY (" + am.name() + " connects endpoint to endpoint only)"));
        }
        RmaLane amo = selectAmoLane(ifaces, local, remote, trace);
        List<Lane> bw = selectBwLanes(ifaces, local, remote, mode, am, limits, trace);
        List<String> refusals = new ArrayList<>();
        List<RmaLane> rma = selectRmaLanes(ifaces, local, remote, limits, refusals, trace);
        Lane keepalive = mode != ErrorMode.NONE ? am : null;
        if (trace != null) {
            trace.add(keepalive != null ? "keepalive  " + am.name() + ": the AM lane (error mode "
                    + mode.name().toLowerCase(Locale.ROOT) + ": it handles peer failure; EP_CHECK goes on "
                    + "it every NUCX_KEEPALIVE_INTERVAL)" : "keepalive  none (error mode none)");
        }
        return new Lanes(am, rma, rma.isEmpty() && !refusals.isEmpty() ? String.join("; ", refusals) : null,
                keepalive, bw, amo, wireup, mode == ErrorMode.FAILOVER
                        ? amFitting.stream().filter(Lane::toIface).toList() : List.of());
    }

    /**
     * UCX's RMA_BW lanes: pairs with GET_ZCOPY on both sides, reachable, by {@link #rmaBwScore}, best first; each
     * further lane on a device of ours and of the peer's no earlier lane uses, while fewer than
     * {@code limits.maxLanes()} (at least one) and none slower than the fastest divided by {@code maxRatio}. The kernel
     * is asked ({@link Iface#accessRefusal}) only about lanes that would be used; a refused one adds its reason to
     * {@code refusals} and the next candidate is tried.
     */
    static List<RmaLane> selectRmaLanes(List<Iface> ifaces, WorkerAddress local, WorkerAddress remote,
                                        BwLimits limits, List<String> refusals, List<String> trace) {
        boolean inThisProcess = inThisProcess(ifaces, remote);
        List<RmaLane> candidates = new ArrayList<>();
        for (int i = 0; i < ifaces.size(); i++) {
            Iface iface = ifaces.get(i);
            WorkerAddress.Entry l = local.entries().get(i);
            if (!l.has(Capability.GET_ZCOPY)) {
                continue;
            }
            for (int j = 0; j < remote.entries().size(); j++) {
                WorkerAddress.Entry r = remote.entries().get(j);
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
                if (inThisProcess && connectsEndpointToEndpoint(l, r)) {
                    note(trace, "rma", l, r, Double.NaN, IN_PROCESS);
                    continue;
                }
                candidates.add(new RmaLane(iface, l, r, rmaBwScore(l, r), i, j));
            }
        }
        candidates.sort((a, b) -> a.score() != b.score() ? Double.compare(b.score(), a.score())
                : tiebreak(local, remote, a.local(), a.remote(), b.local(), b.remote()));
        List<RmaLane> chosen = new ArrayList<>();
        Set<Integer> usedLocal = new HashSet<>();
        Set<Integer> usedRemote = new HashSet<>();
        int max = Math.max(1, limits.maxLanes());
        for (RmaLane c : candidates) {
            String verdict;
            if (chosen.size() >= max) {
                verdict = "not used: " + max + " RMA lane(s) at most (NUCX_MAX_RNDV_LANES)";
            } else if (usedLocal.contains(c.localIndex()) || usedRemote.contains(c.remoteIndex())) {
                verdict = "not used: a device of this pair carries a chosen RMA lane already";
            } else if (!chosen.isEmpty() && c.bandwidth() * limits.maxRatio() < chosen.get(0).bandwidth()) {
                verdict = String.format(Locale.ROOT, "not used: %.0f MB/s is below 1/%.3g of %.0f MB/s "
                        + "(NUCX_MULTI_LANE_MAX_RATIO)", c.bandwidth() / 1e6, limits.maxRatio(),
                        chosen.get(0).bandwidth() / 1e6);
            } else {
                String refusal = c.iface().accessRefusal(c.remote().deviceAddress(), c.remote().ifaceAddress());
                if (refusal == null) {
                    chosen.add(c);
                    usedLocal.add(c.localIndex());
                    usedRemote.add(c.remoteIndex());
                    verdict = chosen.size() == 1 ? "CHOSEN: RMA lane " + c.name() + " (rndv/get/zcopy reads through it)"
                            : "CHOSEN: RMA_BW lane[" + (chosen.size() - 1) + "] " + c.name() + " (multi-rail: "
                            + "transfers are split by bandwidth)";
                } else {
                    refusals.add(refusal);
                    verdict = "refused: " + refusal;
                }
            }
            note(trace, "rma", c.local(), c.remote(), c.score(), verdict);
        }
        return chosen;
    }

    /**
     * UCX's AMO lane: the pair with device atomics (ATOMIC64 on both sides), reachable, with the best
     * {@code 1e-3 / (latency + both overheads)}; null (atomics as active messages) when none has them.
     */
    static RmaLane selectAmoLane(List<Iface> ifaces, WorkerAddress local, WorkerAddress remote, List<String> trace) {
        boolean inThisProcess = inThisProcess(ifaces, remote);
        RmaLane best = null;
        List<RmaLane> fitting = new ArrayList<>();
        for (int i = 0; i < ifaces.size(); i++) {
            WorkerAddress.Entry l = local.entries().get(i);
            if (!l.has(Capability.ATOMIC64)) {
                continue;
            }
            for (int j = 0; j < remote.entries().size(); j++) {
                WorkerAddress.Entry r = remote.entries().get(j);
                if (!r.transport().equals(l.transport())) {
                    continue;
                }
                if (!r.has(Capability.ATOMIC64)) {
                    note(trace, "amo", l, r, Double.NaN, "peer has no device atomics (ATOMIC64)");
                    continue;
                }
                if (!ifaces.get(i).isReachable(r.deviceAddress(), r.ifaceAddress())) {
                    note(trace, "amo", l, r, Double.NaN, "unreachable from " + ifaces.get(i));
                    continue;
                }
                if (inThisProcess && connectsEndpointToEndpoint(l, r)) {
                    note(trace, "amo", l, r, Double.NaN, IN_PROCESS);
                    continue;
                }
                RmaLane c = new RmaLane(ifaces.get(i), l, r, amScore(l, r), i, j);
                fitting.add(c);
                if (best == null || c.score() > best.score() || (c.score() == best.score()
                        && tiebreak(local, remote, c.local(), c.remote(), best.local(), best.remote()) < 0)) {
                    best = c;
                }
            }
        }
        for (RmaLane c : fitting) {
            note(trace, "amo", c.local(), c.remote(), c.score(), c == best ? "CHOSEN: AMO lane " + c.name()
                    + " (fetch-add and compare-and-swap by the device; other atomics as active messages)"
                    : "lower than " + best.name());
        }
        if (trace != null && best == null) {
            trace.add("amo        none: no transport has device atomics (ATOMIC64) on both sides; atomics go as "
                    + "active messages on the AM lane (amo/am)");
        }
        return best;
    }

    /**
     * UCX's wireup message lane for p2p AM lanes: the best connect-to-iface pair that carries active messages of at
     * least 64 bytes, by the AM score; null when none reaches the peer.
     */
    static Lane selectWireupLane(List<Iface> ifaces, WorkerAddress local, WorkerAddress remote, Set<String> excluded) {
        Lane best = null;
        for (int i = 0; i < ifaces.size(); i++) {
            WorkerAddress.Entry l = local.entries().get(i);
            if (!l.has(Capability.AM_BCOPY) || l.maxBcopy() < MIN_AM_BCOPY || !l.has(Capability.CONNECT_TO_IFACE)
                    || (excluded != null && excluded.contains(nameOf(ifaces.get(i))))) {
                continue;
            }
            for (int j = 0; j < remote.entries().size(); j++) {
                WorkerAddress.Entry r = remote.entries().get(j);
                if (!r.transport().equals(l.transport()) || !r.has(Capability.AM_BCOPY)
                        || r.maxBcopy() < MIN_AM_BCOPY || !r.has(Capability.CONNECT_TO_IFACE)
                        || !ifaces.get(i).isReachable(r.deviceAddress(), r.ifaceAddress())) {
                    continue;
                }
                Lane c = new Lane(ifaces.get(i), l, r, amScore(l, r), i, j);
                if (best == null || better(local, remote, c, best)) {
                    best = c;
                }
            }
        }
        return best;
    }

    private static void note(List<String> trace, String criterion, WorkerAddress.Entry l, WorkerAddress.Entry r,
                             double score, String verdict) {
        if (trace != null) {
            trace.add(String.format(Locale.ROOT, "%-10s %-6s -> %-6s %-12s %s", criterion, l.transport(),
                    r.transport(), Double.isNaN(score) ? "-" : String.format(Locale.ROOT, "%.6g", score),
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

    /** {@link #selectAmLane(List, WorkerAddress, WorkerAddress, ErrorMode, Set, List)} in error mode none. */
    public static Lane selectAmLane(List<Iface> ifaces, WorkerAddress local, WorkerAddress remote) {
        return selectAmLane(ifaces, local, remote, ErrorMode.NONE, Set.of(), null);
    }

    /**
     * Selects the AM lane. In error mode peer both sides must handle peer failure (UCX makes
     * ERRHANDLE_PEER_FAILURE mandatory then). A p2p-only pair needs a wireup lane to be usable.
     *
     * @param ifaces   this worker's ifaces, in the same order as {@code local.entries()}
     * @param excluded lanes not to use, by "transport/device" (lane failover re-selects without the failed ones)
     * @param trace    if not null, receives one line per candidate and its verdict
     * @throws UnreachableException listing every candidate and why it lost, when none fits
     */
    public static Lane selectAmLane(List<Iface> ifaces, WorkerAddress local, WorkerAddress remote, ErrorMode mode,
                                    Set<String> excluded, List<String> trace) {
        return selectAmLane(ifaces, local, remote, mode, excluded, false, selectWireupLane(ifaces, local, remote,
                excluded), trace);
    }

    /**
     * The replacement of a failover that left no lane: an AM lane that connects to the peer's iface (a p2p lane would
     * need a wireup of its own), not one of {@code excluded}.
     */
    static Lane selectReplacement(List<Iface> ifaces, WorkerAddress local, WorkerAddress remote, ErrorMode mode,
                                  Set<String> excluded) {
        return selectAmLane(ifaces, local, remote, mode, excluded, true, null, null);
    }

    private static Lane selectAmLane(List<Iface> ifaces, WorkerAddress local, WorkerAddress remote, ErrorMode mode,
                                     Set<String> excluded, boolean toIfaceOnly, Lane wireupAux, List<String> trace) {
        List<String> reasons = new ArrayList<>();
        List<Lane> fitting = amCandidates(ifaces, local, remote, mode, excluded, toIfaceOnly, wireupAux, reasons,
                trace);
        return chooseAmLane(local, remote, fitting, reasons, trace);
    }

    /** The best of the AM candidates {@code fitting}; with none, why, from {@code reasons}. */
    private static Lane chooseAmLane(WorkerAddress local, WorkerAddress remote, List<Lane> fitting,
                                     List<String> reasons, List<String> trace) {
        Lane best = null;
        for (Lane cand : fitting) {
            if (best == null || better(local, remote, cand, best)) {
                best = cand;
            }
        }
        if (best == null) {
            List<String> remoteTls = remote.entries().stream().map(WorkerAddress.Entry::transport).toList();
            throw new UnreachableException("no AM transport to " + remote.name() + " (" + Long.toHexString(remote.uuid())
                    + ", offers " + remoteTls + "): " + (reasons.isEmpty() ? "no transport in common" : reasons));
        }
        for (Lane c : fitting) {
            double latency = ((double) c.local().latency() + (double) c.remote().latency()) / 2;
            String formula = String.format(Locale.ROOT, "= 1e-3 / (latency %.3g s + overheads %.3g + %.3g s)",
                    latency, (double) c.local().overhead(), (double) c.remote().overhead());
            note(trace, "am", c.local(), c.remote(), c.score(), (c == best ? "CHOSEN: AM lane " + c.name() + " "
                    : "lower than " + best.name() + " (score, then priority, then name) ") + formula);
        }
        return best;
    }

    /** The AM lanes that fit, each refusal's reason added to {@code reasons} (and {@code trace}). */
    private static List<Lane> amCandidates(List<Iface> ifaces, WorkerAddress local, WorkerAddress remote,
                                           ErrorMode mode, Set<String> excluded, boolean toIfaceOnly, Lane wireupAux,
                                           List<String> reasons, List<String> trace) {
        List<Lane> fitting = new ArrayList<>();
        for (int i = 0; i < ifaces.size(); i++) {
            Iface iface = ifaces.get(i);
            WorkerAddress.Entry l = local.entries().get(i);
            if (excluded.contains(nameOf(iface))) {
                reasons.add(nameOf(iface) + ": failed on this endpoint");
                continue;
            }
            if (!l.has(Capability.AM_BCOPY) || l.maxBcopy() < MIN_AM_BCOPY) {
                reasons.add(l.transport() + ": no AM bcopy of " + MIN_AM_BCOPY + " bytes here");
                if (trace != null) {
                    trace.add(String.format(Locale.ROOT, "%-10s %-6s %-22s %s", "am", l.transport(), "",
                            "no AM bcopy of " + MIN_AM_BCOPY + " bytes here"));
                }
                continue;
            }
            for (int j = 0; j < remote.entries().size(); j++) {
                WorkerAddress.Entry r = remote.entries().get(j);
                if (!r.transport().equals(l.transport())) {
                    continue;
                }
                Lane cand = new Lane(iface, l, r, amScore(l, r), i, j);
                String why = null;
                if (!r.has(Capability.AM_BCOPY) || r.maxBcopy() < MIN_AM_BCOPY) {
                    why = "peer has no AM bcopy of " + MIN_AM_BCOPY + " bytes";
                } else if (mode != ErrorMode.NONE && !(l.has(Capability.ERRHANDLE_PEER_FAILURE)
                        && r.has(Capability.ERRHANDLE_PEER_FAILURE))) {
                    why = "no peer failure handling " + (l.has(Capability.ERRHANDLE_PEER_FAILURE) ? "at the peer"
                            : "here") + " (needed by error mode peer)";
                } else if (!iface.isReachable(r.deviceAddress(), r.ifaceAddress())) {
                    why = "unreachable from " + iface;
                } else if (!cand.toIface() && (toIfaceOnly || wireupAux == null)) {
                    why = toIfaceOnly ? "connects endpoint to endpoint only (a replacement must connect at once)"
                            : "connects endpoint to endpoint only, and no transport that connects to the peer's "
                            + "iface (tcp, shm) reaches it to carry the wireup";
                }
                if (why != null) {
                    reasons.add(r.transport() + ": " + why);
                    note(trace, "am", l, r, Double.NaN, why);
                    continue;
                }
                fitting.add(cand);
            }
        }
        return fitting;
    }

    /**
     * UCX's AM_BW lanes: reachable AM pairs other than the AM lane's, on devices it does not use, by
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
            if (i == am.localIndex() || !l.has(Capability.AM_BCOPY) || l.maxBcopy() < MIN_AM_BCOPY
                    || !l.has(Capability.CONNECT_TO_IFACE)) {
                continue;
            }
            for (int j = 0; j < remote.entries().size(); j++) {
                WorkerAddress.Entry r = remote.entries().get(j);
                if (j == am.remoteIndex() || !r.transport().equals(l.transport()) || !r.has(Capability.AM_BCOPY)
                        || r.maxBcopy() < MIN_AM_BCOPY || !r.has(Capability.CONNECT_TO_IFACE)) {
                    continue;
                }
                if (mode != ErrorMode.NONE && !(l.has(Capability.ERRHANDLE_PEER_FAILURE)
                        && r.has(Capability.ERRHANDLE_PEER_FAILURE))) {
                    note(trace, "am_bw", l, r, Double.NaN, "no peer failure handling (needed by error mode "
                            + mode.name().toLowerCase(Locale.ROOT) + ")");
                    continue;
                }
                if (!iface.isReachable(r.deviceAddress(), r.ifaceAddress())) {
                    continue; // unreachable pairs are listed by the AM criterion already
                }
                candidates.add(new Lane(iface, l, r, amBwScore(l, r), i, j));
            }
        }
        candidates.sort((a, b) -> a.score() != b.score() ? Double.compare(b.score(), a.score())
                : a.local().transport().compareTo(b.local().transport()) != 0
                ? a.local().transport().compareTo(b.local().transport())
                : tiebreak(local, remote, a.local(), a.remote(), b.local(), b.remote()));
        List<Lane> chosen = new ArrayList<>();
        Set<Integer> usedLocal = new HashSet<>(Set.of(am.localIndex()));
        Set<Integer> usedRemote = new HashSet<>(Set.of(am.remoteIndex()));
        double fastest = bandwidth(am);
        for (Lane c : candidates) {
            String verdict;
            if (1 + chosen.size() >= limits.maxLanes()) {
                verdict = "not used: " + limits.maxLanes() + " lane(s) at most (NUCX_MAX_RNDV_LANES)";
            } else if (usedLocal.contains(c.localIndex()) || usedRemote.contains(c.remoteIndex())) {
                verdict = "not used: a chosen lane uses this device or the peer's already";
            } else if (bandwidth(c) * limits.maxRatio() < Math.max(fastest, bandwidth(c))) {
                verdict = String.format(Locale.ROOT, "not used: %.0f MB/s is below 1/%.3g of %.0f MB/s "
                        + "(NUCX_MULTI_LANE_MAX_RATIO)", bandwidth(c) / 1e6, limits.maxRatio(), fastest / 1e6);
            } else {
                chosen.add(c);
                usedLocal.add(c.localIndex());
                usedRemote.add(c.remoteIndex());
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

    /**
     * Why an RMA or AMO lane that connects endpoint to endpoint (rdma's queue pairs) is not used toward a peer in this
     * process. Such a peer is reached by self, whose lane then carries the wireup; a rendezvous offered over a self AM
     * lane with rdma RMA rails stalled in the emulator-backed tests (the RTS stayed on the self lane), cause not yet
     * found, and a NIC loopback between two workers of one process buys nothing over self and cma anyway.
     */
    static final String IN_PROCESS = "not used: the peer is in this process (self reaches it; no queue pairs to "
            + "ourselves)";

    /** Whether the peer runs in this process: one of our self ifaces reaches its self entry. */
    static boolean inThisProcess(List<Iface> ifaces, WorkerAddress remote) {
        for (Iface iface : ifaces) {
            if (!iface.transport().name().equals("self")) {
                continue;
            }
            for (WorkerAddress.Entry r : remote.entries()) {
                if (r.transport().equals("self") && iface.isReachable(r.deviceAddress(), r.ifaceAddress())) {
                    return true;
                }
            }
        }
        return false;
    }

    /** Whether the pair can only connect endpoint to endpoint (p2p), never to the peer's iface. */
    private static boolean connectsEndpointToEndpoint(WorkerAddress.Entry l, WorkerAddress.Entry r) {
        return l.has(Capability.CONNECT_TO_EP) && r.has(Capability.CONNECT_TO_EP)
                && !(l.has(Capability.CONNECT_TO_IFACE) && r.has(Capability.CONNECT_TO_IFACE));
    }

    /** UCX's {@code ucp_wireup_am_score_func} (and its AMO score). */
    static double amScore(WorkerAddress.Entry l, WorkerAddress.Entry r) {
        double latency = ((double) l.latency() + (double) r.latency()) / 2;
        // Sum the two overheads first: float addition is not associative, and both peers must get the same bits.
        return 1e-3 / (latency + ((double) l.overhead() + (double) r.overhead()));
    }

    private static boolean better(WorkerAddress local, WorkerAddress remote, Lane a, Lane b) {
        if (a.score() != b.score()) {
            return a.score() > b.score();
        }
        int pa = a.local().priority() + a.remote().priority();
        int pb = b.local().priority() + b.remote().priority();
        if (pa != pb) {
            return pa > pb;
        }
        int byName = a.local().transport().compareTo(b.local().transport());
        if (byName != 0) {
            return byName < 0;
        }
        return tiebreak(local, remote, a.local(), a.remote(), b.local(), b.remote()) < 0;
    }

    /**
     * Orders two pairs of entries the same way on both peers: by the device and iface addresses of the lower-uuid
     * worker's entry, then of the other's. Negative when pair a comes first.
     */
    static int tiebreak(WorkerAddress local, WorkerAddress remote, WorkerAddress.Entry al, WorkerAddress.Entry ar,
                        WorkerAddress.Entry bl, WorkerAddress.Entry br) {
        boolean localFirst = Long.compareUnsigned(local.uuid(), remote.uuid()) <= 0;
        WorkerAddress.Entry a1 = localFirst ? al : ar;
        WorkerAddress.Entry a2 = localFirst ? ar : al;
        WorkerAddress.Entry b1 = localFirst ? bl : br;
        WorkerAddress.Entry b2 = localFirst ? br : bl;
        int c = Arrays.compare(a1.deviceAddress(), b1.deviceAddress());
        if (c == 0) {
            c = Arrays.compare(a1.ifaceAddress(), b1.ifaceAddress());
        }
        if (c == 0) {
            c = Arrays.compare(a2.deviceAddress(), b2.deviceAddress());
        }
        if (c == 0) {
            c = Arrays.compare(a2.ifaceAddress(), b2.ifaceAddress());
        }
        return c;
    }

    /** "transport/device" of an iface, as lanes and failover name it. */
    static String nameOf(Iface iface) {
        return iface.transport().name() + "/" + iface.device().name();
    }
}
