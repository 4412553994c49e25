package io.nucx.protocol.tag;

import io.nucx.protocol.select.LinearFunc;
import io.nucx.protocol.select.PerfFactor;
import io.nucx.protocol.select.ProbeParams;
import io.nucx.protocol.select.ProtoCandidate;
import io.nucx.protocol.select.ProtoPerf;
import io.nucx.protocol.select.Protocol;
import io.nucx.protocol.select.SelectionKey;
import io.nucx.transport.IfaceAttributes;

import java.util.List;
import java.util.function.Consumer;

/**
 * The eager tag protocols as the selection engine sees them. Each probe declares facts (range, overheads, copy and
 * wire slopes, per-fragment cost) and one shared model turns them into a {@link ProtoPerf}, as UCX's
 * {@code ucp_proto_single_probe} / {@code ucp_proto_multi_probe} do. How they send is {@link EagerTagSendHandler}.
 */
public final class EagerProtocols {

    /** UCX's protocol overhead knobs: one-fragment 5 ns, multi-fragment 10 ns, software request 40 ns. */
    static final double SINGLE_OVERHEAD = 5e-9;
    static final double MULTI_OVERHEAD = 10e-9;
    static final double REQUEST_OVERHEAD = 40e-9;

    /** {@code egr/short}: one frame, no request; sizes up to the lane's max short. */
    public static final Protocol SHORT = new Eager(EagerTagSendHandler.EGR_SHORT, "eager short", Kind.SHORT);
    /** {@code egr/single/bcopy}: one frame up to the lane's max bcopy. */
    public static final Protocol SINGLE_BCOPY = new Eager(EagerTagSendHandler.EGR_SINGLE_BCOPY,
            "eager copy-in copy-out", Kind.SINGLE);
    /** {@code egr/multi/bcopy}: FIRST + MIDDLE fragments, any size. */
    public static final Protocol MULTI_BCOPY = new Eager(EagerTagSendHandler.EGR_MULTI_BCOPY,
            "multi-frag eager copy-in copy-out", Kind.MULTI);

    /** {@code egrsnc/single/bcopy}: one frame; the send completes when the receiver acknowledges the match. */
    public static final Protocol SYNC_SINGLE_BCOPY = new Eager("egrsnc/single/bcopy",
            "eager synchronous copy-in copy-out", Kind.SYNC_SINGLE);
    /** {@code egrsnc/multi/bcopy}: fragments; completes when the receiver acknowledges the match. */
    public static final Protocol SYNC_MULTI_BCOPY = new Eager("egrsnc/multi/bcopy",
            "multi-frag eager synchronous copy-in copy-out", Kind.SYNC_MULTI);

    /** Registration order: ties go to the earlier. */
    public static final List<Protocol> ALL = List.of(SHORT, SINGLE_BCOPY, MULTI_BCOPY, SYNC_SINGLE_BCOPY,
            SYNC_MULTI_BCOPY);

    private enum Kind {
        SHORT, SINGLE, MULTI, SYNC_SINGLE, SYNC_MULTI;

        boolean sync() {
            return this == SYNC_SINGLE || this == SYNC_MULTI;
        }
    }

    private EagerProtocols() {
    }

    private record Eager(String name, String description, Kind kind) implements Protocol {
        @Override
        public void probe(ProbeParams params, Consumer<ProtoCandidate> out) {
            long key = params.key();
            SelectionKey.Operation op = kind.sync() ? SelectionKey.Operation.TAG_SEND_SYNC
                    : SelectionKey.Operation.TAG_SEND;
            if (SelectionKey.operation(key) != op
                    || SelectionKey.datatype(key) == SelectionKey.DatatypeClass.GENERIC) {
                return;
            }
            IfaceAttributes lane = params.endpoint().amLaneAttrs();
            double copy = 1 / params.copyBandwidth();
            double wire = 1 / lane.bandwidth();
            double ovh = lane.overheadSeconds();
            ProtoPerf perf = new ProtoPerf();
            long thresh = kind == Kind.SHORT ? ProtoCandidate.AUTO : params.bcopyThresh();
            int priority = kind == Kind.SHORT ? 0 : 20;
            switch (kind) {
                case SHORT -> {
                    long max = lane.maxShort() - EagerHeaders.ONLY_LENGTH;
                    if (max < 0) {
                        return;
                    }
                    single(perf, max, ovh, copy, wire, lane.latencySeconds(), 0);
                }
                case SINGLE, SYNC_SINGLE -> single(perf, lane.maxBcopy() - (kind.sync()
                                ? EagerHeaders.SYNC_ONLY_LENGTH : EagerHeaders.ONLY_LENGTH), ovh, copy, wire,
                        lane.latencySeconds(), REQUEST_OVERHEAD);
                case MULTI, SYNC_MULTI -> {
                    // Per-fragment costs are amortised into the slope (UCX's pipeline extrapolation).
                    double frag = lane.maxBcopy() - EagerHeaders.MIDDLE_LENGTH;
                    long max = ProtoPerf.MAX_SIZE;
                    perf.add(0, max, PerfFactor.LOCAL_CPU, new LinearFunc(ovh + REQUEST_OVERHEAD + MULTI_OVERHEAD,
                            copy + (ovh + MULTI_OVERHEAD) / frag));
                    perf.add(0, max, PerfFactor.REMOTE_CPU, new LinearFunc(ovh, copy + ovh / frag));
                    perf.add(0, max, PerfFactor.LOCAL_TL, LinearFunc.slope(wire));
                    perf.add(0, max, PerfFactor.LATENCY, LinearFunc.constant(lane.latencySeconds()));
                }
                default -> throw new IllegalStateException(kind.toString());
            }
            if (kind.sync()) {
                // The acknowledgement: the receiver sends it, we receive it, and it crosses the wire once.
                List<ProtoPerf.Segment> segs = perf.segments();
                long end = segs.get(segs.size() - 1).end();
                perf.add(0, end, PerfFactor.REMOTE_CPU, LinearFunc.constant(ovh));
                perf.add(0, end, PerfFactor.LOCAL_CPU, LinearFunc.constant(ovh));
                perf.add(0, end, PerfFactor.LATENCY, LinearFunc.constant(lane.latencySeconds()));
            }
            out.accept(new ProtoCandidate(this, thresh, priority, perf, params.endpoint().amLane()));
        }

        private static void single(ProtoPerf perf, long max, double ovh, double copy, double wire, double latency,
                                   double extra) {
            perf.add(0, max, PerfFactor.LOCAL_CPU, new LinearFunc(ovh + SINGLE_OVERHEAD + extra, copy));
            perf.add(0, max, PerfFactor.REMOTE_CPU, new LinearFunc(ovh, copy));
            perf.add(0, max, PerfFactor.LOCAL_TL, LinearFunc.slope(wire));
            perf.add(0, max, PerfFactor.LATENCY, LinearFunc.constant(latency));
        }

        @Override
        public String toString() {
            return name;
        }
    }
}
