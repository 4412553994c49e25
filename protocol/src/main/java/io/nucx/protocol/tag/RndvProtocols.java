package io.nucx.protocol.tag;

import io.nucx.protocol.EndpointConfig;
import io.nucx.protocol.ProtocolFamily;
import io.nucx.protocol.RndvSurcharge;
import io.nucx.protocol.select.LinearFunc;
import io.nucx.protocol.select.PerfFactor;
import io.nucx.protocol.select.ProbeParams;
import io.nucx.protocol.select.ProtoCandidate;
import io.nucx.protocol.select.ProtoPerf;
import io.nucx.protocol.select.Protocol;
import io.nucx.protocol.select.SelectionKey;
import io.nucx.transport.Capability;
import io.nucx.transport.IfaceAttributes;

import java.util.List;
import java.util.function.Consumer;

/**
 * {@code tag/rndv} as the selection engine sees it. Its cost, as UCX v2 models it: the RTS control message (send and
 * receive overhead, UCX's 275 ns rts knob, one latency), the RTR answer (overheads, one latency), then the data as
 * multi-fragment active messages; the whole scaled by {@code 1 - RNDV_PERF_DIFF} (0.99) so that rendezvous wins
 * near-ties, except over a lane alone whose copies are the transfer (shm's ring priced at its measured copy rate):
 * there the rendezvous moves its bytes through the same ring by the same two copies as eager and only adds the RTS and
 * RTR, so the 1 % taken off those copies alone made it look cheaper from about 0.5 MB on, where it ran 10-15 % slower
 * than eager (640 and 896 KiB, BENCHMARKS.md); there a sender ahead of its receiver is held back by
 * {@code NUCX_EAGER_MAX} instead. A calibrated profile adds what a rendezvous over the AM lane was measured to cost
 * beyond that ({@link RndvSurcharge}: its control messages after megabytes through shm's ring take microseconds,
 * where the lane's latency is an 8-byte message's). The threshold is where this line crosses the eager lines, never a
 * constant; {@code NUCX_RNDV_THRESH} forces it (priority 60 beats the copy protocols' 20), and so does
 * {@code NUCX_EAGER_MAX} from the size after it while the threshold is automatic. With AM_BW lanes the data's wire
 * time is at the sum of the lanes' bandwidths, as the seed's multi-lane threshold sums them. Synchronous sends may
 * take it too: the sender learns of the match from the RTR (or ATS), so its future completes only after the receiver
 * matched. Stream writes ({@code STREAM_SEND}) take every rendezvous protocol as tagged sends do; only their RTS
 * differs (STREAM_RTS); so do active messages ({@code AM_SEND}, AM_RTS).
 *
 * <p>The data fragments are retained slices of the send buffer, which the send holds from the RTS on anyway. On a lane
 * whose transport writes them from the sender's memory ({@link Capability#AM_ZCOPY}: tcp, native memory) that is
 * UCX's {@code rndv/am/zcopy} and no copy-in is charged; elsewhere (shm's ring write, tcp's heap buffers copied into
 * direct memory by the socket channel) the sender's copy is charged as made. Over self, which hands the slices to the
 * receiver as they are, nobody copies them in (the send waits for the receiver's ATS instead, {@link RndvSender}),
 * yet the copy-in stays charged: it stands in for what self's figures (UCX's: latency 0) leave out, three hops
 * between two loops of about 0.4 us each and the ATS. Charged as made (none), the threshold fell to 2,450 B, while
 * measured eager's ping-pong is faster up to about 128 KiB; from the threshold it keeps (about 70 KiB), a stream gets
 * 2-3x eager's bandwidth from the one copy (BENCHMARKS.md).
 */
public final class RndvProtocols {

    /** UCX_PROTO_OVERHEAD rndv_rts and rndv_rtr. */
    public static final double RTS_OVERHEAD = 275e-9;
    public static final double RTR_OVERHEAD = 40e-9;
    /** 1 - UCX_RNDV_PERF_DIFF / 100: the seed's differentiate factor d. */
    public static final double PERF_DIFF_FACTOR = 0.99;

    public static final Protocol TAG_RNDV = new Protocol() {
        @Override
        public String name() {
            return "tag/rndv";
        }

        @Override
        public String description() {
            return "(?) rendezvous fragmented copy-in copy-out";
        }

        @Override
        public void probe(ProbeParams params, Consumer<ProtoCandidate> out) {
            long key = params.key();
            SelectionKey.Operation op = SelectionKey.operation(key);
            if ((op != SelectionKey.Operation.TAG_SEND && op != SelectionKey.Operation.TAG_SEND_SYNC
                    && op != SelectionKey.Operation.STREAM_SEND && op != SelectionKey.Operation.AM_SEND)
                    || SelectionKey.datatype(key) == SelectionKey.DatatypeClass.GENERIC) {
                return;
            }
            IfaceAttributes lane = params.endpoint().amLaneAttrs();
            double ovh = lane.overheadSeconds();
            double lat = lane.latencySeconds();
            double copy = 1 / params.copyBandwidth(lane);
            double frag = params.endpoint().minMaxBcopy() - RndvHeaders.DATA_LENGTH;
            boolean zeroCopyData = lane.has(Capability.AM_ZCOPY)
                    && !lane.copiesAmPayload((int) frag, SelectionKey.memoryType(key) == SelectionKey.MemoryType.HEAP);
            double copyIn = zeroCopyData ? 0 : copy;
            boolean copiesOnly = lane.copiesAreTheTransfer() && params.endpoint().bwLanes().isEmpty();
            double wire = copiesOnly ? 0 : 1 / params.endpoint().messageBandwidth();
            // Lanes that place: the data come in frames as large as the lanes send placed (RndvReceiver offers them
            // for every receive there), so the receiver handles fewer of them (each placed frame costs it a read of
            // its own and a header read after it). The sender's frames leave in one gathering write as eager's do, so
            // its side is counted as eager's; so is the receipt's copy (a posted receive gets eager's fragments placed
            // too, and the socket's read is a copy either way). Measured on tcp loopback with 64 KiB segments, 128-512
            // KiB: eager was faster at 256 KiB and the rendezvous at 512 KiB; counting fewer fragments on both sides,
            // or dropping the copy, put the threshold below 256 KiB.
            int placed = params.endpoint().minMaxPlaced() - RndvHeaders.DATA_LENGTH;
            double receivedFrag = Math.max(placed, frag);
            long max = ProtoPerf.MAX_SIZE;
            ProtoPerf perf = new ProtoPerf()
                    // RTS out, RTR in, data out
                    .add(0, max, PerfFactor.LOCAL_CPU, new LinearFunc(ovh + RTS_OVERHEAD + ovh + ovh
                            + EagerProtocols.MULTI_OVERHEAD, copyIn + (ovh + EagerProtocols.MULTI_OVERHEAD) / frag))
                    // RTS in, RTR out (plus its protocol overhead), data in
                    .add(0, max, PerfFactor.REMOTE_CPU, new LinearFunc(ovh + ovh + RTR_OVERHEAD + ovh,
                            copy + ovh / receivedFrag))
                    // multi-lane: the fragments are spread over the AM and AM_BW lanes by bandwidth (the seed's sum);
                    // none over a lane alone whose copies are the transfer (shm), as eager's
                    .add(0, max, PerfFactor.LOCAL_TL, LinearFunc.slope(wire))
                    .add(0, max, PerfFactor.LATENCY, LinearFunc.constant(3 * lat));
            // The surcharge is what was measured beyond the tables' prices, which the bias below scales: so by 1/d here.
            surcharge(perf, params.endpoint().rndvSurcharge(), copiesOnly ? 1 : 1 / PERF_DIFF_FACTOR, 0, max);
            if (!copiesOnly) {
                perf.scale(PERF_DIFF_FACTOR);
            }
            out.accept(new ProtoCandidate(this, params.rndvThresh(), 60, perf, params.endpoint().messageLanes(),
                    params.rndvAutoForcedFrom()));
        }

        @Override
        public String toString() {
            return name();
        }
    };

    /**
     * Adds what calibration measured a rendezvous to cost beyond eager, beyond what the model prices
     * ({@link RndvSurcharge#at}), on the latency factor over {@code [min, max]}, where a single message pays it and a
     * stream of them overlaps it: the line where it is above 0, times {@code k}, nothing where it is not.
     */
    static void surcharge(ProtoPerf perf, RndvSurcharge s, double k, long min, long max) {
        positivePart(perf, new LinearFunc(k * s.seconds(), k * s.perByte()), min, max);
    }

    /**
     * Adds {@code line} to {@code perf}'s latency factor over {@code [min, max]} where it is above 0; nothing where
     * it is nowhere above 0 there.
     */
    static void positivePart(ProtoPerf perf, LinearFunc line, long min, long max) {
        if (line.apply(min) <= 0 && line.apply(max) <= 0) {
            return; // a line is highest at one of its ends
        }
        if (line.m() == 0) {
            perf.add(min, max, PerfFactor.LATENCY, line);
            return;
        }
        // Where the line crosses 0: it counts above it, from there on (growing) or up to there (shrinking).
        double zero = -line.c() / line.m();
        if (line.m() > 0) {
            long from = zero <= min ? min : (long) Math.min(max, Math.ceil(zero));
            if (from < max) {
                perf.add(from, max, PerfFactor.LATENCY, line);
            }
        } else {
            long to = (long) Math.min(max, Math.floor(zero));
            if (to >= min) {
                perf.add(min, to, PerfFactor.LATENCY, line);
            }
        }
    }

    /**
     * Sender-side counter: a send the tables gave {@code rndv/get/zcopy} whose RTS went without its key (the key and an
     * active message's user header do not fit one frame; no device to register with) or whose receiver asked for the
     * data by RTR although the key came. The traffic of {@code rndv/get/zcopy} counts RTSes that carried a key;
     * those without count as {@code tag/rndv}.
     */
    public static final String GET_FALLBACK_COUNTER = "rndv/get/zcopy(fallback)";
    /**
     * Sender-side counter: active messages the tables gave a rendezvous that went as {@code egr/multi/bcopy} (counted
     * there too), since their user header does not fit the RTS's one frame.
     */
    public static final String AM_HEADER_FALLBACK_COUNTER = "am:rndv(fallback)";
    /** Receiver-side counters: data read from the sender by cma, or asked for by RTR although a key came. */
    public static final String RECV_GET_COUNTER = "recv:rndv/get/zcopy";
    public static final String RECV_GET_FALLBACK_COUNTER = "recv:rndv/rtr(fallback)";

    /**
     * {@code rndv/get/zcopy} (UCX's tag/rndv with the remote variant "zero-copy read from remote"): the RTS carries
     * the remote key of the send buffer; the receiver reads it with the RMA lane (cma: process_vm_readv) straight
     * into the receive buffer and answers ATS, which completes the send. Cost, per UCX v2's rts + get model:
     * <ul>
     *   <li>cpu: the send buffer's registration (the RMA lane's {@code c + m * size}), RTS out (AM overhead + rts
     *       knob), ATS in; no copy on the sender;</li>
     *   <li>cpu-remote: RTS in, ATS out, one RMA call per {@code rmaSegment} (its overhead amortised into the slope);
     *       no copy: the data lands in the receive buffer;</li>
     *   <li>tl-remote: the receiver pulls the bytes at the RMA lane's bandwidth;</li>
     *   <li>lat: RTS and ATS cross the AM lane, the GET the RMA lane;</li>
     * </ul>
     * all × 0.99 like {@code tag/rndv}. A calibrated profile adds what the read was measured to cost beyond that
     * against eager's fragments ({@link EndpointConfig#readSurcharge}, where above 0, at every size as
     * {@code tag/rndv}'s): over shm+cma the read's figures, fitted through 64 KiB and 512 KiB reads, put the switch
     * from eager at 740,541 B, where the read took 1.32 of eager's time, and the read kept falling behind beyond
     * 1 MiB (1.5-2x the ring's time to 64 MiB; stopped at the read's bulk rate, the surcharge left it a window at
     * 1.55-1.73x the best protocol's time: BENCHMARKS.md, "cma's read priced against eager where the two meet").
     * Declines without an RMA lane with GET_ZCOPY, for heap memory (the GC moves it: no address another process
     * could read) and for non-contiguous data. Shares {@code tag/rndv}'s user threshold and priority.
     */
    public static final Protocol GET_ZCOPY = new RmaZcopy("rndv/get/zcopy",
            "(?) rendezvous zero-copy read from remote", Capability.GET_ZCOPY) {
        @Override
        ProtoPerf perf(EndpointConfig ep, long max) {
            IfaceAttributes am = ep.amLaneAttrs();
            IfaceAttributes rma = ep.rmaLaneAttrs();
            double ovh = am.overheadSeconds();
            ProtoPerf perf = new ProtoPerf()
                    // register the send buffer, RTS out, ATS in
                    .add(1, max, PerfFactor.LOCAL_CPU, new LinearFunc(ovh + RTS_OVERHEAD + ovh
                            + rma.regCostSeconds(), rma.regCostPerByte()))
                    // RTS in, the reads, ATS out
                    .add(1, max, PerfFactor.REMOTE_CPU, new LinearFunc(ovh + rma.overheadSeconds() + ovh,
                            rma.overheadSeconds() / rma.rmaSegment()))
                    .add(1, max, PerfFactor.LATENCY, LinearFunc.constant(2 * am.latencySeconds()
                            + rma.latencySeconds()));
            // Measured beyond the tables' prices, which RmaZcopy's bias scales after: so by 1/d here.
            surcharge(perf, ep.readSurcharge(), 1 / PERF_DIFF_FACTOR, 1, max);
            return wireTime(perf, ep, max, PerfFactor.REMOTE_TL);
        }
    };

    /** Sender-side counters: messages written into the receiver by PUT (then ATP), or sent as RNDV_DATA instead. */
    public static final String PUT_COUNTER = "rndv/put/zcopy";
    public static final String PUT_FALLBACK_COUNTER = "rndv/put/zcopy(fallback)";
    /** Receiver-side counters: receives completed by ATP; plain RTRs although the scheme asked for put. */
    public static final String RECV_PUT_COUNTER = "recv:rndv/put/zcopy";
    public static final String RECV_PUT_FALLBACK_COUNTER = "recv:rndv/put/zcopy(fallback)";
    /**
     * Receives whose buffer was offered for PUT and whose endpoint ended before the sender's last word: held past the
     * end (the PUT safety rule, {@link RndvReceiver}) until an ATP, RNDV_DATA, or the revoke of the sender's access.
     */
    public static final String RECV_PUT_HELD_COUNTER = "recv:rndv/put/zcopy(held)";

    /**
     * {@code rndv/put/zcopy} (UCX's tag/rndv with the remote variant "zero-copy write to remote"): the RTS is plain;
     * the receiver answers with an RTR carrying its receive buffer's remote key; the sender writes the data there with
     * the RMA lane (cma: process_vm_writev) and sends ATP, on which the receive completes. Only with
     * {@code NUCX_RNDV_SCHEME=put_zcopy} (the worker leaves it out of the registry otherwise). Cost, per UCX v2's
     * rtr + put model:
     * <ul>
     *   <li>cpu: RTS out (AM overhead + rts knob), RTR in, one RMA call per {@code rmaSegment} (its overhead amortised
     *       into the slope), ATP out; no copy;</li>
     *   <li>cpu-remote: RTS in, the receive buffer's registration, RTR out (plus the rtr knob), ATP in;</li>
     *   <li>tl: the sender pushes the bytes at the RMA lane's bandwidth (local, unlike get's tl-remote);</li>
     *   <li>lat: RTS, RTR and ATP cross the AM lane, the PUT the RMA lane;</li>
     * </ul>
     * all × 0.99 like {@code tag/rndv}. One more control message than {@code rndv/get/zcopy}, so where both run get
     * is cheaper. Declines without an RMA lane with PUT_ZCOPY, for heap memory (as get: the tables are per send
     * buffer type; a heap send that went by {@code tag/rndv} is still written by PUT through a bounce chunk if the
     * receiver offers its key) and for non-contiguous data. Shares {@code tag/rndv}'s user threshold and priority.
     */
    public static final Protocol PUT_ZCOPY = new RmaZcopy("rndv/put/zcopy",
            "(?) rendezvous zero-copy write to remote", Capability.PUT_ZCOPY) {
        @Override
        ProtoPerf perf(EndpointConfig ep, long max) {
            IfaceAttributes am = ep.amLaneAttrs();
            IfaceAttributes rma = ep.rmaLaneAttrs();
            double ovh = am.overheadSeconds();
            ProtoPerf perf = new ProtoPerf()
                    // RTS out, RTR in, the writes, ATP out
                    .add(1, max, PerfFactor.LOCAL_CPU, new LinearFunc(ovh + RTS_OVERHEAD + ovh
                            + rma.overheadSeconds() + ovh, rma.overheadSeconds() / rma.rmaSegment()))
                    // RTS in, register the receive buffer, RTR out, ATP in
                    .add(1, max, PerfFactor.REMOTE_CPU, new LinearFunc(ovh + ovh + RTR_OVERHEAD + ovh
                            + rma.regCostSeconds(), rma.regCostPerByte()))
                    .add(1, max, PerfFactor.LATENCY, LinearFunc.constant(3 * am.latencySeconds()
                            + rma.latencySeconds()));
            return wireTime(perf, ep, max, PerfFactor.LOCAL_TL);
        }
    };

    /**
     * The data's wire time, on {@code factor}: at the first RMA lane's bandwidth while a message is too small to split
     * ({@link EndpointConfig#MIN_RAIL_PART} per rail), then at the sum of every RMA lane's (UCX's RMA_BW multi-rail,
     * the seed's summed bandwidth: the threshold moves down with each rail). A single rail with a bulk rate (a
     * calibrated profile's: where a transfer outgrows the caches) runs at it from its size on, the cost continuous
     * there: the reads of cma by one core slow from 16-29 GB/s in cache to 5-10 GB/s beyond, where the ring's two
     * cores copying in turn through cached segments are the faster (BENCHMARKS.md).
     */
    static ProtoPerf wireTime(ProtoPerf perf, EndpointConfig ep, long max, PerfFactor factor) {
        IfaceAttributes rail = ep.rmaLaneAttrs();
        long splitFrom = EndpointConfig.MIN_RAIL_PART * ep.rmaRailCount();
        if (ep.rmaRailCount() < 2 || splitFrom > max) {
            double perByte = 1 / rail.bandwidth();
            if (!rail.hasBulkRate() || rail.bulkFrom() > max) {
                return perf.add(1, max, factor, LinearFunc.slope(perByte));
            }
            long from = Math.max(2, rail.bulkFrom());
            double bulkPerByte = 1 / rail.bulkBandwidth();
            return perf.add(1, from - 1, factor, LinearFunc.slope(perByte))
                    .add(from, max, factor, new LinearFunc(from * (perByte - bulkPerByte), bulkPerByte));
        }
        return perf.add(1, splitFrom - 1, factor, LinearFunc.slope(1 / rail.bandwidth()))
                .add(splitFrom, max, factor, LinearFunc.slope(1 / ep.rmaBandwidth()));
    }

    /**
     * What the RMA rendezvous variants share: they run for tagged sends of one contiguous run of non-heap memory on an
     * endpoint whose RMA lane has {@code needs}, up to its max zero-copy size, with tag/rndv's threshold and priority,
     * and their cost (from {@link #perf}) is scaled by the differentiating factor.
     */
    private abstract static class RmaZcopy implements Protocol {
        private final String name;
        private final String description;
        private final Capability needs;

        RmaZcopy(String name, String description, Capability needs) {
            this.name = name;
            this.description = description;
            this.needs = needs;
        }

        abstract ProtoPerf perf(EndpointConfig ep, long max);

        @Override
        public String name() {
            return name;
        }

        @Override
        public String description() {
            return description;
        }

        @Override
        public void probe(ProbeParams params, Consumer<ProtoCandidate> out) {
            long key = params.key();
            SelectionKey.Operation op = SelectionKey.operation(key);
            if ((op != SelectionKey.Operation.TAG_SEND && op != SelectionKey.Operation.TAG_SEND_SYNC
                    && op != SelectionKey.Operation.STREAM_SEND && op != SelectionKey.Operation.AM_SEND)
                    || SelectionKey.datatype(key) != SelectionKey.DatatypeClass.CONTIG
                    || SelectionKey.memoryType(key) == SelectionKey.MemoryType.HEAP
                    || !params.endpoint().hasRmaLane() || !params.endpoint().rmaLaneAttrs().has(needs)) {
                return;
            }
            IfaceAttributes rma = params.endpoint().rmaLaneAttrs();
            long max = Math.min(ProtoPerf.MAX_SIZE, rma.maxZcopy());
            ProtoPerf perf = perf(params.endpoint(), max).scale(PERF_DIFF_FACTOR);
            out.accept(new ProtoCandidate(this, params.rndvThresh(), 60, perf, params.endpoint().amLane() + " + "
                    + params.endpoint().rmaLanes(), params.rndvAutoForcedFrom()));
        }

        @Override
        public String toString() {
            return name;
        }
    }

    private RndvProtocols() {
    }

    /** The tag rendezvous family: these protocols, the active messages they send and answer, and their codec. */
    public static final ProtocolFamily FAMILY = new ProtocolFamily("tag/rndv", List.of(TAG_RNDV, GET_ZCOPY, PUT_ZCOPY),
            RndvCodec.AM_IDS, (pipeline, endpoint, worker) -> {
                RndvCodec codec = new RndvCodec(endpoint, worker);
                pipeline.addLast(RndvCodec.NAME, codec);
                return codec;
            });
}
