package io.nucx.protocol.select;

import java.util.ArrayList;
import java.util.List;

/**
 * The selection sweep (UCX's {@code ucp_proto_select_elem_init_thresh}). Never names a protocol: it probes every
 * registered one, then walks sizes from 0 to {@link ProtoPerf#MAX_SIZE}:
 * <ol>
 *   <li>the candidates are those whose flattened perf covers the current size; the step ends where one of them ends
 *       or a not-yet-started one starts;</li>
 *   <li>user thresholds: a {@link ProtoCandidate#DISABLED} candidate never takes part; below its threshold a
 *       candidate drops out (and the step ends at its threshold); at or above it the candidate is forced, and every
 *       candidate whose priority is below the highest of the forced ones drops out (UCX's rule: one of equal or
 *       higher priority stays, forced or not). If that leaves none, none is dropped;</li>
 *   <li>the lower envelope of what remains, by linear-function intersection; equal cost goes to the protocol
 *       registered first.</li>
 * </ol>
 * Adjacent ranges won by the same candidate are merged.
 */
public final class ProtoSelector {

    private ProtoSelector() {
    }

    private record Probed(int order, ProtoCandidate candidate, List<ProtoPerf.Flat> flat) {
        ProtoPerf.Flat at(long size) {
            for (ProtoPerf.Flat f : flat) {
                if (f.start() <= size && size <= f.end()) {
                    return f;
                }
            }
            return null;
        }

        /** First start after {@code size}, or -1. */
        long nextStart(long size) {
            long next = -1;
            for (ProtoPerf.Flat f : flat) {
                if (f.start() > size && (next < 0 || f.start() < next)) {
                    next = f.start();
                }
            }
            return next;
        }
    }

    /** Probes {@code registry} in order and builds the table for {@code params.key()}. */
    public static ProtoTable select(List<Protocol> registry, ProbeParams params) {
        List<ProtoCandidate> candidates = new ArrayList<>();
        for (Protocol p : registry) {
            p.probe(params, candidates::add);
        }
        return select(params.key(), candidates);
    }

    /** Builds the table from already-probed candidates, in registration order. */
    public static ProtoTable select(long key, List<ProtoCandidate> candidates) {
        boolean multi = SelectionKey.multiSend(key);
        List<Probed> probed = new ArrayList<>();
        for (int i = 0; i < candidates.size(); i++) {
            probed.add(new Probed(i, candidates.get(i), candidates.get(i).perf().flatten(multi)));
        }
        List<ProtoTable.Entry> out = new ArrayList<>();
        long size = 0;
        while (true) {
            long end = ProtoPerf.MAX_SIZE;
            List<Probed> active = new ArrayList<>();
            List<LinearFunc> funcs = new ArrayList<>();
            for (Probed p : probed) {
                if (p.candidate().cfgThresh() == ProtoCandidate.DISABLED) {
                    continue; // never chosen, not even as the fallback
                }
                ProtoPerf.Flat f = p.at(size);
                if (f != null) {
                    active.add(p);
                    funcs.add(f.func());
                    end = Math.min(end, f.end());
                } else {
                    long next = p.nextStart(size);
                    if (next > 0) {
                        end = Math.min(end, next - 1);
                    }
                }
            }
            if (!active.isEmpty()) {
                boolean[] drop = new boolean[active.size()];
                int forcedPriority = Integer.MIN_VALUE;
                for (int i = 0; i < active.size(); i++) {
                    ProtoCandidate c = active.get(i).candidate();
                    // A user threshold rules the candidate out below it; the automatic bound leaves it to cost there.
                    boolean user = c.cfgThresh() != ProtoCandidate.AUTO;
                    long from = user ? c.cfgThresh() : c.autoForcedFrom();
                    if (from == ProtoCandidate.NEVER) {
                        continue;
                    }
                    if (size < from) {
                        drop[i] = user;
                        end = Math.min(end, from - 1);
                    } else {
                        forcedPriority = Math.max(forcedPriority, c.cfgPriority());
                    }
                }
                if (forcedPriority != Integer.MIN_VALUE) {
                    for (int i = 0; i < active.size(); i++) {
                        if (active.get(i).candidate().cfgPriority() < forcedPriority) {
                            drop[i] = true;
                        }
                    }
                }
                List<Probed> keep = new ArrayList<>();
                List<LinearFunc> keepFuncs = new ArrayList<>();
                for (int i = 0; i < active.size(); i++) {
                    if (!drop[i]) {
                        keep.add(active.get(i));
                        keepFuncs.add(funcs.get(i));
                    }
                }
                if (keep.isEmpty()) { // every candidate was ruled out: rule out none
                    keep = active;
                    keepFuncs = funcs;
                }
                for (long[] w : Envelope.winners(keepFuncs, size, end, true)) {
                    add(out, new ProtoTable.Entry(w[1], w[2], keep.get((int) w[0]).candidate()));
                }
            }
            if (end == ProtoPerf.MAX_SIZE) {
                return new ProtoTable(key, out, candidates);
            }
            size = end + 1;
        }
    }

    private static void add(List<ProtoTable.Entry> out, ProtoTable.Entry e) {
        if (!out.isEmpty()) {
            ProtoTable.Entry last = out.get(out.size() - 1);
            if (last.candidate() == e.candidate() && last.end() + 1 == e.start()) {
                out.set(out.size() - 1, new ProtoTable.Entry(last.start(), e.end(), e.candidate()));
                return;
            }
        }
        out.add(e);
    }
}
