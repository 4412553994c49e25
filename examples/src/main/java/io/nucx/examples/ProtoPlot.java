package io.nucx.examples;

import io.nucx.examples.perf.PlotCanvas;
import io.nucx.protocol.select.ProtoCandidate;
import io.nucx.protocol.select.ProtoPerf;
import io.nucx.protocol.select.ProtoTable;
import io.nucx.protocol.select.SelectionKey;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Graphics2D;
import java.io.File;
import java.io.IOException;
import java.util.List;
import java.util.Locale;

/**
 * Draws a protocol table's envelope as a PNG: time against message size (both logarithmic, 1 B to 1 GiB), a thin line
 * per probed candidate over its range, and the chosen candidate of each range drawn thick over it.
 */
final class ProtoPlot {

    private static final int W = 1100;
    private static final int H = 700;
    private static final int LEFT = 90;
    private static final int RIGHT = 260;
    private static final int TOP = 50;
    private static final int BOTTOM = 60;
    private static final double MIN_SIZE = 1;
    private static final double MAX_SIZE = 1L << 30;
    private static final Color[] COLORS = {new Color(0x1f77b4), new Color(0xff7f0e), new Color(0x2ca02c),
            new Color(0xd62728), new Color(0x9467bd), new Color(0x8c564b)};

    private ProtoPlot() {
    }

    static void write(ProtoTable table, String title, File out) throws IOException {
        System.setProperty("java.awt.headless", "true");
        List<ProtoCandidate> cands = table.candidates();
        boolean multi = SelectionKey.multiSend(table.key());
        double tMin = Double.MAX_VALUE;
        double tMax = 0;
        for (ProtoCandidate c : cands) {
            for (double s = MIN_SIZE; s <= MAX_SIZE; s *= 2) {
                double t = at(c, s, multi);
                if (t > 0) {
                    tMin = Math.min(tMin, t);
                    tMax = Math.max(tMax, t);
                }
            }
        }
        if (tMax == 0) {
            throw new IOException("nothing to plot: no protocol covers 1 B .. 1 GiB for this key");
        }
        double yLo = Math.log10(tMin) - 0.2;
        double yHi = Math.log10(tMax) + 0.2;
        PlotCanvas canvas = new PlotCanvas(W, H, title + ": " + SelectionKey.describe(table.key()), LEFT);
        Graphics2D g = canvas.graphics();
        int pw = W - LEFT - RIGHT;
        int ph = H - TOP - BOTTOM;
        g.drawRect(LEFT, TOP, pw, ph);
        for (int e = 0; e <= 30; e += 5) { // sizes 1 B .. 1 GiB
            int x = LEFT + (int) (pw * e / 30.0);
            g.setColor(new Color(0xdddddd));
            g.drawLine(x, TOP, x, TOP + ph);
            g.setColor(Color.BLACK);
            g.drawString(label(1L << e), x - 12, TOP + ph + 18);
        }
        g.drawString("message size (bytes, log)", LEFT + pw / 2 - 70, H - 15);
        for (int d = (int) Math.ceil(yLo); d <= Math.floor(yHi); d++) {
            int y = TOP + ph - (int) (ph * (d - yLo) / (yHi - yLo));
            g.setColor(new Color(0xdddddd));
            g.drawLine(LEFT, y, LEFT + pw, y);
            g.setColor(Color.BLACK);
            g.drawString(String.format(Locale.ROOT, "1e%d s", d), 20, y + 4);
        }
        for (int i = 0; i < cands.size(); i++) {
            ProtoCandidate c = cands.get(i);
            Color col = COLORS[i % COLORS.length];
            g.setColor(col);
            g.setStroke(new BasicStroke(1.2f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_ROUND, 1, new float[] {5, 4}, 0));
            polyline(g, c, MIN_SIZE, MAX_SIZE, multi, yLo, yHi, pw, ph);
            g.setStroke(new BasicStroke(1));
            g.fillRect(W - RIGHT + 15, TOP + 10 + 22 * i, 14, 4);
            g.setColor(Color.BLACK);
            g.drawString(c.protocol().name(), W - RIGHT + 35, TOP + 16 + 22 * i);
        }
        g.setStroke(new BasicStroke(4));
        for (ProtoTable.Entry e : table.entries()) {
            double lo = Math.max(MIN_SIZE, e.start());
            double hi = Math.min(MAX_SIZE, e.end() == ProtoPerf.MAX_SIZE ? MAX_SIZE : e.end());
            if (lo > hi) {
                continue;
            }
            g.setColor(COLORS[cands.indexOf(e.candidate()) % COLORS.length]);
            polyline(g, e.candidate(), lo, hi, multi, yLo, yHi, pw, ph);
        }
        g.setColor(Color.BLACK);
        g.drawString("thick: chosen (lower envelope)", W - RIGHT + 15, TOP + 30 + 22 * cands.size());
        canvas.writePng(out);
    }

    private static void polyline(Graphics2D g, ProtoCandidate c, double lo, double hi, boolean multi, double yLo,
                                 double yHi, int pw, int ph) {
        int px = -1;
        int py = -1;
        for (int step = 0; step <= 300; step++) {
            double s = Math.exp(Math.log(lo) + (Math.log(hi) - Math.log(lo)) * step / 300.0);
            double t = at(c, s, multi);
            if (t <= 0) {
                px = -1;
                continue;
            }
            int x = LEFT + (int) (pw * Math.log(s) / Math.log(MAX_SIZE));
            int y = TOP + ph - (int) (ph * (Math.log10(t) - yLo) / (yHi - yLo));
            if (px >= 0) {
                g.drawLine(px, py, x, y);
            }
            px = x;
            py = y;
        }
    }

    /** The candidate's time at {@code size}, or 0 where it is not defined. */
    private static double at(ProtoCandidate c, double size, boolean multi) {
        long s = (long) size;
        for (ProtoPerf.Flat f : c.perf().flatten(multi)) {
            if (f.start() <= s && s <= f.end()) {
                return f.func().apply(size);
            }
        }
        return 0;
    }

    private static String label(long v) {
        return v >= 1 << 30 ? (v >> 30) + "G" : v >= 1 << 20 ? (v >> 20) + "M" : v >= 1 << 10 ? (v >> 10) + "K"
                : Long.toString(v);
    }
}
