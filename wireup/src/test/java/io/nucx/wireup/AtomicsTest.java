package io.nucx.wireup;

import io.netty.util.concurrent.Future;
import io.nucx.Endpoint;
import io.nucx.protocol.amo.AtomicOp;
import io.nucx.protocol.amo.RemoteAccessException;
import io.nucx.protocol.amo.RemoteMemoryKey;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Atomics on a worker's registered memory from two other workers at once, over real lanes: every fetch-and-add
 * returns a distinct previous value (the sum is right and no update was lost), compare-and-swap lets exactly one
 * contender win, and refusals name what was wrong.
 */
@Timeout(120)
class AtomicsTest {

    @RegisterExtension
    final TestWorkers workers = new TestWorkers();

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"tcp", "shm"})
    void concurrentFetchAndAddFromTwoWorkersLosesNothing(String tls) throws Exception {
        // 10,000 atomics in flight through one owner on a shared 2-core machine: keepalive gets a timeout that load
        // alone cannot reach (what this test checks is the atomics).
        DefaultWorker owner = workers.start("owner", "TLS", tls, "KEEPALIVE_TIMEOUT", "30s");
        DefaultWorker a = workers.start("a", "TLS", tls, "KEEPALIVE_TIMEOUT", "30s");
        DefaultWorker b = workers.start("b", "TLS", tls, "KEEPALIVE_TIMEOUT", "30s");
        try (Arena arena = Arena.ofShared()) {
            MemorySegment words = arena.allocate(64, 8);
            RemoteMemoryKey key = owner.registerMemory(words);
            Endpoint ea = a.connect(owner.address());
            Endpoint eb = b.connect(owner.address());
            int perWorker = 5000;
            List<Future<Long>> results = new ArrayList<>();
            for (int i = 0; i < perWorker; i++) {
                results.add(ea.atomic(AtomicOp.ADD, key, key.base() + 8, 1));
                results.add(eb.atomic(AtomicOp.ADD, key, key.base() + 8, 1));
            }
            BitSet seen = new BitSet();
            for (Future<Long> f : results) {
                long previous = f.get(30, TimeUnit.SECONDS);
                assertTrue(previous >= 0 && previous < 2L * perWorker && !seen.get((int) previous),
                        "previous value " + previous + " twice or out of range");
                seen.set((int) previous);
            }
            assertEquals(2 * perWorker, seen.cardinality());
            assertEquals(2L * perWorker, (long) ValueLayout.JAVA_LONG.varHandle().getVolatile(words, 8L));

            // A lock word: both try to take it at once; one wins, the other sees the winner's id.
            Future<Long> fa = ea.compareAndSwap(key, key.base(), 0, 0xa);
            Future<Long> fb = eb.compareAndSwap(key, key.base(), 0, 0xb);
            long ra = fa.get(10, TimeUnit.SECONDS);
            long rb = fb.get(10, TimeUnit.SECONDS);
            long holder = words.get(ValueLayout.JAVA_LONG, 0);
            assertTrue((ra == 0 && rb == 0xa && holder == 0xa) || (rb == 0 && ra == 0xb && holder == 0xb),
                    "a got " + ra + ", b got " + rb + ", word holds " + holder);
            assertEquals(holder, ea.atomic(AtomicOp.SWAP, key, key.base(), 0).get(10, TimeUnit.SECONDS));
            assertEquals(0, words.get(ValueLayout.JAVA_LONG, 0), "released");

            // Refusals: outside the region (caught before sending), and a region the owner withdrew.
            ExecutionException outside = assertThrows(ExecutionException.class,
                    () -> ea.atomic(AtomicOp.ADD, key, key.base() + 64, 1).get(10, TimeUnit.SECONDS));
            assertTrue(outside.getCause().getMessage().contains("outside region"), outside.getCause().getMessage());
            owner.unregisterMemory(key);
            ExecutionException gone = assertThrows(ExecutionException.class,
                    () -> ea.atomic(AtomicOp.ADD, key, key.base() + 8, 1).get(10, TimeUnit.SECONDS));
            assertInstanceOf(RemoteAccessException.class, gone.getCause());
            assertTrue(gone.getCause().getMessage().contains("no such registered region"),
                    gone.getCause().getMessage());
            assertEquals(2L * perWorker, words.get(ValueLayout.JAVA_LONG, 8), "the refused ones changed nothing");
            assertTrue(ea.isActive() && eb.isActive(), "a refused atomic fails only itself");
            ea.close().sync();
            eb.close().sync();
        }
    }
}
