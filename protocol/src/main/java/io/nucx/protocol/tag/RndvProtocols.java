package io.nucx.protocol.tag;

import io.nucx.protocol.select.LinearFunc;
import io.nucx.protocol.select.PerfFactor;
import io.nucx.protocol.select.ProbeParams;
import io.nucx.protocol.select.ProtoCandidate;
import io.nucx.protocol.select.ProtoPerf;
import io.nucx.protocol.select.Protocol;
import io.nucx.protocol.select.SelectionKey;
import io.nucx.transport.IfaceAttributes;

import java.util.function.Consumer;

/**
 * {@code tag/rndv} as the selection engine sees it. Its cost, as UCX v2 models it: the RTS control message (send and
 * receive overhead, UCX's 275 ns rts knob, one latency), the RTR answer (overheads, one latency), then the data as
 * multi-fragment active messages; the whole scaled by {@code 1 - RNDV_PERF_DIFF} (0.99) so that rendezvous wins
 * near-ties. The threshold is where this line crosses the eager lines, never a constant; {@code NUCX_RNDV_THRESH}
 * forces it (priority 60 beats the copy protocols' 20). Synchronous sends may take it too: the sender learns of the
 * match from the RTR (or ATS), so its future completes only after the receiver matched.
 */
public final class RndvProtocols {

    /** UCX_PROTO_OVERHEAD rndv_rts and rndv_rtr. */
    static final double RTS_OVERHEAD = 275e-9;
    static final double RTR_OVERHEAD = 40e-9;
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
            if ((op != SelectionKey.Operation.TAG_SEND && op != SelectionKey.Operation.TAG_SEND_SYNC)
                    || SelectionKey.datatype(key) == SelectionKey.DatatypeClass.GENERIC) {
                return;
            }
            IfaceAttributes lane = params.endpoint().amLaneAttrs();
            double ovh = lane.overheadSeconds();
            double lat = lane.latencySeconds();
            double copy = 1 / params.copyBandwidth();
            double frag = lane.maxBcopy() - RndvHeaders.DATA_LENGTH;
            long max = ProtoPerf.MAX_SIZE;
            ProtoPerf perf = new ProtoPerf()
                    // RTS out, RTR in, data out
                    .add(0, max, PerfFactor.LOCAL_CPU, new LinearFunc(ovh + RTS_OVERHEAD + ovh + ovh
                            + EagerProtocols.MULTI_OVERHEAD, copy + (ovh + EagerProtocols.MULTI_OVERHEAD) / frag))
                    // RTS in, RTR out (plus its protocol overhead), data in
                    .add(0, max, PerfFactor.REMOTE_CPU, new LinearFunc(ovh + ovh + RTR_OVERHEAD + ovh,
                            copy + ovh / frag))
                    .add(0, max, PerfFactor.LOCAL_TL, LinearFunc.slope(1 / lane.bandwidth()))
                    .add(0, max, PerfFactor.LATENCY, LinearFunc.constant(3 * lat))
                    .scale(PERF_DIFF_FACTOR);
            out.accept(new ProtoCandidate(this, params.rndvThresh(), 60, perf, params.endpoint().amLane()));
        }

        @Override
        public String toString() {
            return name();
        }
    };

    private RndvProtocols() {
    }
}
