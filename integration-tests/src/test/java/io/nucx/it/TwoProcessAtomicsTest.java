package io.nucx.it;

import io.netty.util.concurrent.Future;
import io.nucx.Endpoint;
import io.nucx.NucxBootstrap;
import io.nucx.Worker;
import io.nucx.WorkerAddress;
import io.nucx.protocol.amo.AtomicOp;
import io.nucx.protocol.amo.RemoteMemoryKey;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Atomics on another process's memory: two workers of this JVM add to one word of the peer's registered memory at
 * once; the peer reads the sum from its own memory, and every fetch-and-add got a distinct previous value.
 */
@Timeout(120)
class TwoProcessAtomicsTest {

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"tcp", "shm"})
    void twoWorkersAddToOneWordOfAnotherProcess(String tls) throws Exception {
        int perWorker = 10_000;
        // 20,000 atomics in flight at once through a peer under PARANOID leak tracking on a shared 2-core machine:
        // the peer may take seconds over one sender's burst before it answers the other, which is not what this
        // test is about, so keepalive gets a timeout that load alone cannot reach.
        String keepalive = "30s";
        try (PeerProcess peer = PeerProcess.start(AtomicsPeer.class, Map.of("NUCX_TLS", tls,
                "NUCX_KEEPALIVE_TIMEOUT", keepalive))) {
            WorkerAddress address = WorkerAddress.fromHex(peer.awaitLine("ADDRESS"));
            RemoteMemoryKey key = RemoteMemoryKey.fromHex(peer.awaitLine("KEY"));
            List<Worker> workers = new ArrayList<>();
            List<Future<Long>> results = new ArrayList<>();
            try {
                List<Endpoint> eps = new ArrayList<>();
                for (String name : new String[] {"w1", "w2"}) {
                    Worker w = new NucxBootstrap().name(name).config("TLS", tls)
                            .config("KEEPALIVE_TIMEOUT", keepalive).start();
                    workers.add(w);
                    eps.add(w.connect(address));
                }
                for (int i = 0; i < perWorker; i++) {
                    for (Endpoint ep : eps) {
                        results.add(ep.atomic(AtomicOp.ADD, key, key.base() + 8, 1));
                    }
                }
                BitSet seen = new BitSet();
                for (Future<Long> f : results) {
                    long previous;
                    try {
                        previous = f.get(60, TimeUnit.SECONDS);
                    } catch (Exception e) {
                        System.err.println("DEBUG peer stderr:\n" + peer.stderr());
                        throw e;
                    }
                    assertTrue(previous >= 0 && previous < 2L * perWorker && !seen.get((int) previous),
                            "previous value " + previous + " twice or out of range");
                    seen.set((int) previous);
                }
                assertEquals(2 * perWorker, seen.cardinality());
                assertEquals(0, (long) eps.get(0).compareAndSwap(key, key.base(), 0, 99).get(10, TimeUnit.SECONDS));
                peer.send("READ");
                assertEquals("99 " + (2 * perWorker), peer.awaitLine("WORDS"), "the peer reads the words itself");
                for (Endpoint ep : eps) {
                    ep.close().sync();
                }
            } finally {
                for (Worker w : workers) {
                    w.close().get(20, TimeUnit.SECONDS);
                }
            }
            peer.send("END");
            assertEquals(0, peer.waitFor(60), () -> "peer exit code; stderr:\n" + peer.stderr());
        }
    }
}
