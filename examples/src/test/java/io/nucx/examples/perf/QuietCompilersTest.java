package io.nucx.examples.perf;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The settling's rule on made-up readings: 200 ms, 1 % (2 ms of compiling) as perftest uses it. */
class QuietCompilersTest {

    private static final long MS = 1_000_000L;

    private final QuietCompilers rule = new QuietCompilers(200 * MS, 0.01);

    @Test
    void theFirstReadingOnlyStartsTheInterval() {
        assertFalse(rule.quiet(0, 0, 0));
        assertFalse(rule.quiet(199 * MS, 0, 0), "not yet 200 ms");
        assertTrue(rule.quiet(200 * MS, 0, 0));
    }

    @Test
    void compilingOverTheShareOnEitherSideStartsAgainFromThere() {
        rule.quiet(0, 0, 0);
        assertFalse(rule.quiet(100 * MS, 0, 3 * MS), "the server compiled 3 ms");
        assertFalse(rule.quiet(250 * MS, 0, 3 * MS), "150 ms since the restart");
        assertTrue(rule.quiet(300 * MS, 0, 3 * MS));
        QuietCompilers other = new QuietCompilers(200 * MS, 0.01);
        other.quiet(0, 10 * MS, 0);
        assertFalse(other.quiet(150 * MS, 13 * MS, 0), "the client compiled 3 ms");
        assertFalse(other.quiet(300 * MS, 13 * MS, 0), "150 ms since the restart");
        assertTrue(other.quiet(350 * MS, 13 * MS, 0));
    }

    @Test
    void aLittleCompilingWithinTheShareOfTheWholeIntervalIsQuiet() {
        rule.quiet(0, 0, 0);
        assertFalse(rule.quiet(25 * MS, MS, 0), "1 ms in the first chunk: within 2 ms of 200, not judged yet");
        assertTrue(rule.quiet(200 * MS, MS, MS), "2 ms in 200");
        QuietCompilers longer = new QuietCompilers(200 * MS, 0.01);
        longer.quiet(0, 0, 0);
        assertFalse(longer.quiet(150 * MS, 0, 2 * MS + 1), "over 2 ms before 200 ms: busy");
        assertFalse(longer.quiet(200 * MS, 0, 2 * MS + 1), "the interval began again at 150 ms");
        assertTrue(longer.quiet(350 * MS, 0, 2 * MS + 1));
    }

    @Test
    void aReadingThatMovesBackCountsAsWork() {
        rule.quiet(0, 50 * MS, 0);
        assertFalse(rule.quiet(100 * MS, 40 * MS, 0));
        assertFalse(rule.quiet(250 * MS, 40 * MS, 0));
        assertTrue(rule.quiet(300 * MS, 40 * MS, 0));
    }

    @Test
    void aBadIntervalOrShareIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> new QuietCompilers(0, 0.01));
        assertThrows(IllegalArgumentException.class, () -> new QuietCompilers(MS, 1.0));
    }
}
