package io.nucx.examples.perf;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Graphics2D;
import java.io.File;
import java.io.IOException;
import java.util.List;
import java.util.Locale;

/**
 * Draws measured curves as a PNG: time per message against message size (both logarithmic) in the upper panel, and in
 * the lower panel each curve divided by a reference (the best forced protocol at each size, or UCX), with a line at
 * the tolerance. Vertical lines mark the protocol table's crossovers (where the engine switches protocol), so they can
 * be read against where the measured curves cross.
 */
final class SweepPlot {

    /** One curve. {@code thick}: drawn over the others (the engine's choice); {@code dashed}: a model, not measured. */
    record Series(String name, double[] sizes, double[] values, boolean thick, boolean dashed) {
    }

    /** A vertical line at {@code size}, labelled; {@code faint}: drawn grey (e.g. the static model's crossovers). */
    record Marker(double size, String label, boolean faint) {
    }

    private static final int W = 1200;
    private static final int H = 900;
    private static final int LEFT = 90;
    private static final int RIGHT = 250;
    private static final int TOP = 60;
    private static final int GAP = 70;
    private static final int BOTTOM = 50;
    private static final Color[] COLORS = {new Color(0x1f77b4), new Color(0xff7f0e), new Color(0x2ca02c),
            new Color(0xd62728), new Color(0x9467bd), new Color(0x8c564b), new Color(0xe377c2), new Color(0x17becf)};

    private SweepPlot() {
    }

    /**
     * @param top       curves of the upper panel (time per message, us)
     * @param ratios    curves of the lower panel (ratio to the reference)
     * @param ratioName what the ratio is, e.g. "time / best forced protocol"
     * @param tolerance a horizontal line in the lower panel (e.g. 1.10)
     */
    static void write(File out, String title, List<Series> top, List<Series> ratios, String ratioName,
                      double tolerance, List<Marker> markers) throws IOException {
        System.setProperty("java.awt.headless", "true");
        double xMin = Double.MAX_VALUE;
        double xMax = 0;
        double yMin = Double.MAX_VALUE;
        double yMax = 0;
        for (Series s : top) {
            for (int i = 0; i < s.sizes().length; i++) {
                if (s.values()[i] > 0 && s.sizes()[i] > 0) {
                    xMin = Math.min(xMin, s.sizes()[i]);
                    xMax = Math.max(xMax, s.sizes()[i]);
                    yMin = Math.min(yMin, s.values()[i]);
                    yMax = Math.max(yMax, s.values()[i]);
                }
            }
        }
        if (yMax == 0) {
            throw new IOException("nothing to plot for " + title);
        }
        double lx0 = Math.log10(xMin);
        double lx1 = Math.max(Math.log10(xMax), lx0 + 1);
        double ly0 = Math.log10(yMin) - 0.1;
        double ly1 = Math.log10(yMax) + 0.1;
        double rMax = tolerance + 0.4;
        double rMin = 0.85; // a panel from 0.8 unless a curve goes lower (nucx at a fraction of UCX's time)
        for (Series s : ratios) {
            for (double v : s.values()) {
                if (Double.isFinite(v)) {
                    rMax = Math.max(rMax, Math.min(v, 4.0));
                    rMin = Math.min(rMin, v);
                }
            }
        }
        double r0 = Math.max(0, rMin - 0.05);
        double r1 = rMax + 0.05;

        PlotCanvas canvas = new PlotCanvas(W, H, title, LEFT);
        Graphics2D g = canvas.graphics();
        int pw = W - LEFT - RIGHT;
        int topH = (H - TOP - GAP - BOTTOM) * 62 / 100;
        int botH = H - TOP - GAP - BOTTOM - topH;
        Panel upper = new Panel(LEFT, TOP, pw, topH, lx0, lx1, ly0, ly1, true);
        Panel lower = new Panel(LEFT, TOP + topH + GAP, pw, botH, lx0, lx1, r0, r1, false);
        upper.frame(g, "time per message (us, log)");
        lower.frame(g, ratioName);
        int ty = lower.y(tolerance);
        g.setColor(new Color(0xaa0000));
        g.setStroke(new BasicStroke(1, BasicStroke.CAP_BUTT, BasicStroke.JOIN_ROUND, 1, new float[] {6, 4}, 0));
        g.drawLine(LEFT, ty, LEFT + pw, ty);
        g.drawString(String.format(Locale.ROOT, "%.2f", tolerance), LEFT + pw + 5, ty + 4);
        g.setColor(Color.GRAY);
        g.drawLine(LEFT, lower.y(1.0), LEFT + pw, lower.y(1.0));
        for (Marker m : markers) {
            if (m.size() < xMin || m.size() > xMax) {
                continue;
            }
            int x = upper.x(m.size());
            g.setColor(m.faint() ? new Color(0xbbbbbb) : new Color(0x555555));
            g.setStroke(new BasicStroke(1, BasicStroke.CAP_BUTT, BasicStroke.JOIN_ROUND, 1,
                    m.faint() ? new float[] {2, 3} : new float[] {5, 3}, 0));
            g.drawLine(x, TOP, x, TOP + topH);
            g.drawLine(x, lower.top, x, lower.top + botH);
            g.rotate(-Math.PI / 2, x - 3, TOP + topH - 5);
            g.drawString(m.label(), x - 3, TOP + topH - 5);
            g.rotate(Math.PI / 2, x - 3, TOP + topH - 5);
        }
        int legend = 0;
        for (int pass = 0; pass < 2; pass++) { // thin curves first, the thick ones over them
            for (int i = 0; i < top.size(); i++) {
                Series s = top.get(i);
                if (s.thick() != (pass == 1)) {
                    continue;
                }
                Color c = s.thick() ? Color.BLACK : COLORS[i % COLORS.length];
                draw(g, upper, s, c);
                for (Series r : ratios) {
                    if (r.name().equals(s.name())) {
                        draw(g, lower, r, c);
                    }
                }
                g.setColor(c);
                g.setStroke(stroke(s));
                g.drawLine(W - RIGHT + 15, TOP + 12 + 20 * legend, W - RIGHT + 40, TOP + 12 + 20 * legend);
                g.setColor(Color.BLACK);
                g.drawString(s.name(), W - RIGHT + 47, TOP + 16 + 20 * legend);
                legend++;
            }
        }
        g.setColor(Color.BLACK);
        g.drawString("message size (bytes, log)", LEFT + pw / 2 - 70, H - 12);
        canvas.writePng(out);
    }

    private static BasicStroke stroke(Series s) {
        return s.dashed() ? new BasicStroke(1.2f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_ROUND, 1, new float[] {6, 4},
                0) : new BasicStroke(s.thick() ? 3f : 1.5f);
    }

    private static void draw(Graphics2D g, Panel p, Series s, Color c) {
        g.setColor(c);
        g.setStroke(stroke(s));
        int px = Integer.MIN_VALUE;
        int py = 0;
        for (int i = 0; i < s.sizes().length; i++) {
            double v = s.values()[i];
            if (!(v > 0) || !Double.isFinite(v)) {
                px = Integer.MIN_VALUE;
                continue;
            }
            int x = p.x(s.sizes()[i]);
            int y = p.y(v);
            if (px != Integer.MIN_VALUE) {
                g.drawLine(px, py, x, y);
            }
            if (!s.dashed()) {
                g.fillOval(x - 2, y - 2, 5, 5);
            }
            px = x;
            py = y;
        }
    }

    /** A plot area: x is log10(size); y is log10(value) ({@code logY}) or the value clipped to the range. */
    private record Panel(int left, int top, int w, int h, double x0, double x1, double y0, double y1, boolean logY) {
        int x(double size) {
            return left + (int) Math.round(w * (Math.log10(size) - x0) / (x1 - x0));
        }

        int y(double v) {
            double t = logY ? Math.log10(v) : Math.max(y0, Math.min(y1, v));
            return top + h - (int) Math.round(h * (t - y0) / (y1 - y0));
        }

        void frame(Graphics2D g, String yName) {
            g.setStroke(new BasicStroke(1));
            g.setColor(Color.BLACK);
            g.drawRect(left, top, w, h);
            for (int e = (int) Math.ceil(x0); e <= x1; e++) {
                int x = x(Math.pow(10, e));
                g.setColor(new Color(0xe0e0e0));
                g.drawLine(x, top, x, top + h);
            }
            for (int e = 0; e <= 26; e += 2) { // powers of two as labels: 1 .. 64M
                double size = Math.pow(2, e);
                if (Math.log10(size) < x0 - 1e-9 || Math.log10(size) > x1 + 1e-9) {
                    continue;
                }
                int x = x(size);
                g.setColor(Color.BLACK);
                g.drawString(SweepSummary.size((long) size), x - 10, top + h + 15);
            }
            if (logY) {
                for (int d = (int) Math.floor(y0); d <= Math.ceil(y1); d++) {
                    for (int k : new int[] {1, 2, 5}) {
                        double v = k * Math.pow(10, d);
                        if (Math.log10(v) < y0 || Math.log10(v) > y1) {
                            continue;
                        }
                        int y = y(v);
                        g.setColor(new Color(0xe0e0e0));
                        g.drawLine(left, y, left + w, y);
                        g.setColor(Color.BLACK);
                        g.drawString(v >= 1 ? String.format(Locale.ROOT, "%,.0f", v)
                                : String.format(Locale.ROOT, "%.2g", v), left - 60, y + 4);
                    }
                }
            } else {
                for (double v = Math.ceil(y0 * 10) / 10; v <= y1; v += y1 - y0 > 2 ? 0.5 : 0.1) {
                    int y = y(v);
                    g.setColor(new Color(0xe0e0e0));
                    g.drawLine(left, y, left + w, y);
                    g.setColor(Color.BLACK);
                    g.drawString(String.format(Locale.ROOT, "%.1f", v), left - 35, y + 4);
                }
            }
            g.setColor(Color.BLACK);
            g.drawString(yName, left, top - 6);
        }
    }
}
