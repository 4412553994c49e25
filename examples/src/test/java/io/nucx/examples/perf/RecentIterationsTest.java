package io.nucx.examples.perf;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

class RecentIterationsTest {

    @Test
    void thePercentileIsOfTheIterationsHeldInOrder() {
        RecentIterations r = new RecentIterations();
        assertEquals(0, r.percentile(50), "none held");
        for (long v : new long[] {50, 10, 40, 20, 30}) {
            r.add(v, 1);
        }
        assertEquals(30, r.percentile(50)); // index (5 - 1) * 0.5 = 2 of 10 20 30 40 50
        assertEquals(10, r.percentile(0));
        assertEquals(50, r.percentile(100));
        assertEquals(40, r.percentile(90)); // index 3.6, cut to 3
    }

    @Test
    void onlyTheLastIterationsCountAndBatchesNot() {
        RecentIterations r = new RecentIterations();
        for (int i = 0; i < RecentIterations.SIZE; i++) {
            r.add(1_000, 1); // a slow second, all pushed out below
        }
        for (int i = 0; i < RecentIterations.SIZE; i++) {
            r.add(100, 1);
        }
        r.add(5_000, 64); // a batch: its time is not one iteration's
        assertEquals(100, r.percentile(99));
        r.clear();
        r.add(7, 1);
        assertEquals(7, r.percentile(50));
    }
}
