package io.nucx.wireup;

import io.nucx.ErrorMode;
import io.nucx.UnreachableException;
import io.nucx.WorkerAddress;
import io.nucx.protocol.select.ProtoTable;
import io.nucx.protocol.select.SelectionCache;
import io.nucx.protocol.select.SelectionKey;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * What a worker would do toward a peer, printed without connecting: the lanes and why (as {@code ucx_info} shows
 * them) and the protocol tables (as UCX_PROTO_INFO prints them). The library prints; tools call it.
 */
final class WorkerInfo {

    private WorkerInfo() {
    }

    /**
     * The protocol table an endpoint to {@code remote} would use for tagged sends from {@code memory}: the lanes are
     * chosen from the two addresses, the table built from the lanes, on the worker's loop.
     */
    static ProtoTable protocolTable(DefaultWorker w, WorkerAddress remote, SelectionKey.MemoryType memory)
            throws Exception {
        LaneSelector.Lanes lanes = w.selectLanes(remote, w.defaultErrorMode());
        SelectionCache cache = w.protocols().selectionCache(lanes.endpointConfig(), lanes.locality());
        long key = SelectionKey.pack(SelectionKey.Operation.TAG_SEND, 0, SelectionKey.DatatypeClass.CONTIG, memory,
                lanes.locality());
        return w.eventLoop().submit(() -> cache.table(key)).get();
    }

    /** The lanes, then {@link #protocolTable} for heap and direct memory. */
    static String protocolInfo(DefaultWorker w, WorkerAddress remote) throws Exception {
        StringBuilder out = new StringBuilder();
        out.append("# lanes to ").append(remote.name()).append(": ")
                .append(LaneSelector.selectLanes(w.ifaces(), w.address(), remote).describe()).append('\n');
        for (SelectionKey.MemoryType mem : new SelectionKey.MemoryType[] {SelectionKey.MemoryType.HEAP,
                SelectionKey.MemoryType.DIRECT}) {
            ProtoTable t = protocolTable(w, remote, mem);
            out.append(t.format(t.entries().isEmpty() ? "" : t.entries().get(0).candidate().config()));
        }
        return out.toString();
    }

    /**
     * Every candidate pair of transports per criterion (AM, AM_BW, RMA, AMO) with its UCX score and verdict, then the
     * chosen lanes and what each carries. The peer computes the same from the same two addresses.
     */
    static String laneInfo(DefaultWorker w, WorkerAddress remote, ErrorMode mode) {
        List<String> trace = new ArrayList<>();
        StringBuilder out = new StringBuilder();
        out.append("# lanes from ").append(w.name()).append(" (").append(Long.toHexString(w.uuid())).append(") to ")
                .append(remote.name()).append(" (").append(Long.toHexString(remote.uuid())).append("), error mode ")
                .append(mode.name().toLowerCase(Locale.ROOT)).append('\n');
        out.append("# transports here: ").append(w.address().entries().stream().map(WorkerAddress.Entry::transport)
                .toList()).append("; there: ").append(remote.entries().stream().map(WorkerAddress.Entry::transport)
                .toList()).append('\n');
        out.append(String.format(Locale.ROOT, "# %-10s %-6s    %-6s %-12s %s%n", "criterion", "local",
                "remote", "score", "verdict"));
        try {
            LaneSelector.Lanes lanes = LaneSelector.selectLanes(w.ifaces(), w.address(), remote, mode, w.bwLimits(),
                    trace);
            for (String line : trace) {
                out.append("# ").append(line).append('\n');
            }
            out.append("# lane[0] ").append(lanes.am().name()).append(": am")
                    .append(lanes.keepalive() != null ? ", keepalive" : "")
                    .append(lanes.amo() == null ? ", amo (as active messages)" : "")
                    .append(lanes.am().p2p() ? " (p2p, wired up on " + lanes.wireup().name() + ")" : "")
                    .append('\n');
            for (int i = 1; i < lanes.count(); i++) {
                out.append("# lane[").append(i).append("] ").append(lanes.lane(i).name()).append(": am_bw")
                        .append('\n');
            }
            for (int i = 0; i < lanes.rmaLanes().size(); i++) {
                LaneSelector.RmaLane r = lanes.rmaLanes().get(i);
                out.append("# rma lane[").append(i).append("] ").append(r.name()).append(i == 0 ? ": rma" : ": rma_bw")
                        .append(String.format(Locale.ROOT, " (%.0f MB/s)", r.bandwidth() / 1e6)).append('\n');
            }
            if (lanes.amo() != null) {
                out.append("# amo lane ").append(lanes.amo().name()).append(": amo (device atomics: fetch-add, "
                        + "compare-and-swap; other atomics as active messages)").append('\n');
            }
        } catch (UnreachableException e) {
            for (String line : trace) {
                out.append("# ").append(line).append('\n');
            }
            out.append("# no lanes: ").append(e.getMessage()).append('\n');
        }
        return out.toString();
    }
}
