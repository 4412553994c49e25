package io.nucx.protocol.select;

import java.util.Locale;

/**
 * Time as a linear function of message size, {@code c + m * size} seconds (UCX's {@code ucs_linear_func_t}).
 */
public record LinearFunc(double c, double m) {

    public static final LinearFunc ZERO = new LinearFunc(0, 0);

    public static LinearFunc constant(double c) {
        return new LinearFunc(c, 0);
    }

    public static LinearFunc slope(double m) {
        return new LinearFunc(0, m);
    }

    public double apply(double size) {
        return c + m * size;
    }

    public LinearFunc add(LinearFunc o) {
        return new LinearFunc(c + o.c, m + o.m);
    }

    public LinearFunc scale(double k) {
        return new LinearFunc(c * k, m * k);
    }

    /**
     * The size at which {@code a} and {@code b} are equal: {@code (c2 - c1) / (m1 - m2)}; NaN when they are parallel
     * (never, or everywhere, equal).
     */
    public static double intersect(LinearFunc a, LinearFunc b) {
        double dm = a.m - b.m;
        return dm == 0 ? Double.NaN : (b.c - a.c) / dm;
    }

    @Override
    public String toString() {
        return String.format(Locale.ROOT, "%.3fns + %.4fns/B", c * 1e9, m * 1e9);
    }
}
