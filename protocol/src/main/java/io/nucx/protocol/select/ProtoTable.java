package io.nucx.protocol.select;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The result of selection for one (endpoint configuration, key): sorted, adjacent ranges of sizes, each with the
 * protocol that serves it (UCX's {@code thresholds[]}). A size no protocol covers has no entry.
 */
public final class ProtoTable {

    /** One range {@code [start, end]}, inclusive. */
    public record Entry(long start, long end, ProtoCandidate candidate) {
    }

    private final long key;
    private final Entry[] entries;
    private final List<ProtoCandidate> candidates;

    ProtoTable(long key, List<Entry> entries, List<ProtoCandidate> candidates) {
        this.key = key;
        this.entries = entries.toArray(new Entry[0]);
        this.candidates = List.copyOf(candidates);
    }

    /** Every probed candidate, chosen or not, in registration order (for plots and explanations). */
    public List<ProtoCandidate> candidates() {
        return candidates;
    }

    public long key() {
        return key;
    }

    public List<Entry> entries() {
        return List.of(entries);
    }

    /** The candidate for {@code size}, or null if no protocol can send it. A few entries: a linear scan. */
    public ProtoCandidate lookup(long size) {
        for (Entry e : entries) {
            if (size <= e.end()) {
                return size >= e.start() ? e.candidate() : null;
            }
        }
        return null;
    }

    /** The table as UCX_PROTO_INFO prints it. */
    public String format(String title) {
        List<String[]> rows = new ArrayList<>();
        for (Entry e : entries) {
            rows.add(new String[] {memunits(e.start()) + ".." + memunits(e.end()),
                    e.candidate().protocol().description(), e.candidate().config()});
        }
        int w0 = "Range".length();
        int w1 = "Description".length();
        int w2 = "Config".length();
        for (String[] r : rows) {
            w0 = Math.max(w0, r[0].length());
            w1 = Math.max(w1, r[1].length());
            w2 = Math.max(w2, r[2].length());
        }
        String head = SelectionKey.describe(key);
        w1 = Math.max(w1, head.length() - w0 - 3 - w2 - 3);
        String rule = "+" + "-".repeat(w0 + 2) + "+" + "-".repeat(w1 + 2) + "+" + "-".repeat(w2 + 2) + "+";
        StringBuilder b = new StringBuilder();
        b.append(rule).append('\n');
        b.append(String.format(Locale.ROOT, "| %-" + (w0 + w1 + w2 + 6) + "s |%n", title + " " + head));
        b.append(rule).append('\n');
        b.append(String.format(Locale.ROOT, "| %" + w0 + "s | %-" + w1 + "s | %-" + w2 + "s |%n", "Range",
                "Description", "Config"));
        b.append(rule).append('\n');
        for (String[] r : rows) {
            b.append(String.format(Locale.ROOT, "| %" + w0 + "s | %-" + w1 + "s | %-" + w2 + "s |%n", r[0], r[1], r[2]));
        }
        b.append(rule).append('\n');
        return b.toString();
    }

    /** UCX's memunits: 8191, 8K, 64K, 1M, inf. */
    static String memunits(long v) {
        if (v == ProtoPerf.MAX_SIZE) {
            return "inf";
        }
        if (v >= 1L << 30 && v % (1L << 30) == 0) {
            return (v >> 30) + "G";
        }
        if (v >= 1L << 20 && v % (1L << 20) == 0) {
            return (v >> 20) + "M";
        }
        if (v >= 1L << 10 && v % (1L << 10) == 0) {
            return (v >> 10) + "K";
        }
        return Long.toString(v);
    }
}
