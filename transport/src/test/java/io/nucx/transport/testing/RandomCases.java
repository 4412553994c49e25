package io.nucx.transport.testing;

import java.util.SplittableRandom;
import java.util.function.Function;

/**
 * Property checks as plain JUnit tests: draws cases from a seeded {@link SplittableRandom} and checks each, and on the
 * first failure reports the property, the case (its {@code toString}, no shrinking) and how to draw it again.
 *
 * <p>The seed is {@value #DEFAULT_SEED} unless {@code -Dnucx.prop.seed=S} says otherwise; {@code -Dnucx.prop.cases=N}
 * runs N cases of every property instead of each test's own count (a longer hunt). Case {@code i} draws from its own
 * generator, {@link #caseSeed(long, int)}, so a failing case draws the same with any count.
 */
public final class RandomCases {

    public static final String SEED_PROPERTY = "nucx.prop.seed";
    public static final String CASES_PROPERTY = "nucx.prop.cases";
    public static final long DEFAULT_SEED = 0x6E75_6378L; // "nucx"

    /** A check of one case; an {@link AssertionError} or any exception is its failure. */
    @FunctionalInterface
    public interface Check<T> {
        void check(T value) throws Exception;
    }

    private RandomCases() {
    }

    /** The run's seed: {@code nucx.prop.seed} (decimal or 0x hex), or {@link #DEFAULT_SEED}. */
    public static long seed() {
        String s = System.getProperty(SEED_PROPERTY);
        if (s == null || s.isBlank()) {
            return DEFAULT_SEED;
        }
        try {
            return s.startsWith("0x") ? Long.parseUnsignedLong(s.substring(2), 16) : Long.parseLong(s);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(SEED_PROPERTY + "=" + s + " is not a decimal or 0x-hex long", e);
        }
    }

    /** How many cases to run: {@code nucx.prop.cases} if set, otherwise {@code cases}. */
    static int count(int cases) {
        String s = System.getProperty(CASES_PROPERTY);
        if (s == null || s.isBlank()) {
            return cases;
        }
        try {
            int n = Integer.parseInt(s);
            if (n <= 0) {
                throw new NumberFormatException("not positive");
            }
            return n;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(CASES_PROPERTY + "=" + s + " is not a positive int", e);
        }
    }

    /** The seed case {@code index} draws from: the run's seed and the index, mixed (SplittableRandom's own mix). */
    public static long caseSeed(long seed, int index) {
        return new SplittableRandom(seed + index * 0x9E3779B97F4A7C15L).nextLong();
    }

    /**
     * Draws {@code cases} values with {@code generate} and checks each with {@code check}.
     *
     * @throws AssertionError on the first failing case, naming the property, the seed, the case's index and the
     *                        case itself, with the original failure as its cause
     */
    public static <T> void forAll(String property, int cases, Function<SplittableRandom, T> generate, Check<T> check) {
        long seed = seed();
        int n = count(cases);
        for (int i = 0; i < n; i++) {
            T value = generate.apply(new SplittableRandom(caseSeed(seed, i)));
            try {
                check.check(value);
            } catch (Exception | AssertionError e) {
                throw new AssertionError("property '" + property + "' fails at case " + i + " of " + n + " (-D"
                        + SEED_PROPERTY + "=" + seed + "): " + value + "\n  " + e, e);
            }
        }
    }
}
