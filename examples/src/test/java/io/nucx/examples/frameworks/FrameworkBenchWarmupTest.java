package io.nucx.examples.frameworks;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** FrameworkBench's warm-up: a count of requests, or a time for which chunks of requests go on. */
class FrameworkBenchWarmupTest {

    @Test
    void aCountRunsWholeChunksUntilItIsDone() throws Exception {
        List<Integer> chunks = new ArrayList<>();
        FrameworkBench.Warmup.parse("250").run(100, chunks::add);
        assertEquals(List.of(100, 100, 100), chunks);

        chunks.clear();
        FrameworkBench.Warmup.parse("0").run(100, chunks::add);
        assertEquals(List.of(), chunks);
    }

    @Test
    void aTimeRunsChunksUntilItHasPassed() throws Exception {
        FrameworkBench.Warmup warmup = FrameworkBench.Warmup.parse("1s");
        assertEquals(TimeUnit.SECONDS.toNanos(1), warmup.nanos());
        int[] chunks = {0};
        long t0 = System.nanoTime();
        // Each chunk takes 50 ms: a second of them is about 20, and the time has passed when the last one returns.
        warmup.run(10, count -> {
            chunks[0]++;
            Thread.sleep(50);
        });
        long took = System.nanoTime() - t0;
        assertTrue(took >= TimeUnit.SECONDS.toNanos(1), "returned after " + took + " ns");
        assertTrue(chunks[0] >= 2 && chunks[0] <= 21, chunks[0] + " chunks of 50 ms in a second");
    }

    @Test
    void aValueThatIsNeitherCountNorSecondsIsNamed() {
        for (String bad : new String[] {"20x", "-5", "-1s", "s", "1.5s", ""}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> FrameworkBench.Warmup.parse(bad));
            assertEquals("warm-up '" + bad + "': a count of requests (1000) or seconds (20s)", e.getMessage());
        }
    }
}
