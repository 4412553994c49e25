package io.nucx.it;

import io.netty.channel.ChannelFuture;
import io.netty.util.concurrent.Future;
import io.nucx.Endpoint;
import io.nucx.NucxBootstrap;
import io.nucx.Worker;
import io.nucx.WorkerAddress;
import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * 1,000 endpoints from one worker to one peer worker in another JVM (each endpoint is its own tcp connection, or its own
 * pair of shm rings, so the peer has 1,000 too): every endpoint wires up, carries a synchronous send both ways (data there, acknowledgement
 * back), keeps up keepalive, and closes gracefully, after which the peer has no endpoint left.
 *
 * <p>It prints the wireup time per endpoint (connect() to {@code wireupFuture()}: the peer's REPLY; with p2p lanes the
 * switch to the dialled lane after the REPLY) measured with HdrHistogram, twice: one
 * endpoint at a time (latency), then for a burst of another 1,000 connected at once (each endpoint's own time, all
 * in flight together). These are figures, not assertions: BENCHMARKS.md records them with this test as the command.
 */
@Timeout(300)
class ThousandEndpointsTest {

    private static final int ENDPOINTS = 1000;

    /**
     * {@code iface}: each endpoint's lane connects to the peer's listening socket and carries the REQUEST; {@code p2p}
     * (NUCX_TCP_CONNECT=p2p): an auxiliary lane carries REQUEST and REPLY, then a second connection is dialled to the
     * peer's endpoint and carries the ACK and the data, and the auxiliary lane closes.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"tcp iface", "tcp p2p", "shm"})
    void aThousandEndpointsToOnePeerWireUpCarryTrafficAndCloseCleanly(String lanes) throws Exception {
        String tls = lanes.split(" ")[0];
        String connect = lanes.endsWith("p2p") ? "p2p" : "iface";
        try (PeerProcess peer = PeerProcess.start(FailurePeer.class, Map.of("NUCX_TLS", tls, "NUCX_TCP_CONNECT",
                connect), "serve", Integer.toString(2 * ENDPOINTS))) {
            WorkerAddress address = WorkerAddress.fromHex(peer.awaitLine("ADDRESS"));
            Worker w = new NucxBootstrap().name("many").config("TLS", tls).config("TCP_CONNECT", connect).start();
            try {
                // Warm-up: JIT the wireup path on both sides, then close (graceful, so the peer forgets them).
                for (int i = 0; i < 50; i++) {
                    Endpoint e = w.connect(address);
                    assertTrue(e.wireupFuture().await(10, TimeUnit.SECONDS), "warm-up wireup");
                    assertTrue(e.close().await(10, TimeUnit.SECONDS));
                }
                Histogram oneAtATime = new Histogram(TimeUnit.SECONDS.toNanos(10), 3);
                List<Endpoint> eps = new ArrayList<>();
                long t0 = System.nanoTime();
                for (int i = 0; i < ENDPOINTS; i++) {
                    long start = System.nanoTime();
                    Endpoint ep = w.connect(address);
                    assertTrue(ep.wireupFuture().await(30, TimeUnit.SECONDS),
                            () -> "endpoint " + eps.size() + " not wired up in 30 s");
                    assertTrue(ep.wireupFuture().isSuccess(), () -> "wireup: " + ep.wireupFuture().cause());
                    oneAtATime.recordValue(System.nanoTime() - start);
                    eps.add(ep);
                }
                long sequentialMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);

                Histogram burst = new Histogram(TimeUnit.SECONDS.toNanos(60), 3);
                List<Endpoint> burstEps = new ArrayList<>();
                long[] starts = new long[ENDPOINTS];
                long[] ends = new long[ENDPOINTS];
                CountDownLatch recorded = new CountDownLatch(ENDPOINTS);
                long t1 = System.nanoTime();
                for (int i = 0; i < ENDPOINTS; i++) {
                    int k = i;
                    starts[k] = System.nanoTime();
                    Endpoint ep = w.connect(address);
                    ep.wireupFuture().addListener(f -> {
                        ends[k] = System.nanoTime();
                        recorded.countDown(); // publishes ends[k] to the test thread
                    });
                    burstEps.add(ep);
                }
                for (Endpoint ep : burstEps) {
                    assertTrue(ep.wireupFuture().await(60, TimeUnit.SECONDS) && ep.wireupFuture().isSuccess(),
                            () -> "burst wireup: " + ep.wireupFuture().cause());
                }
                long burstMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t1);
                assertTrue(recorded.await(10, TimeUnit.SECONDS));
                for (int i = 0; i < ENDPOINTS; i++) {
                    burst.recordValue(ends[i] - starts[i]);
                }
                eps.addAll(burstEps);
                assertEquals(2 * ENDPOINTS, w.endpoints().size());

                // Every endpoint usable both ways: a synchronous send completes only on the peer's acknowledgement.
                List<ChannelFuture> sends = new ArrayList<>();
                for (int i = 0; i < eps.size(); i++) {
                    sends.add(eps.get(i).tagSendSync(i, MessagePlan.content(i, 64)));
                }
                for (int i = 0; i < sends.size(); i++) {
                    ChannelFuture f = sends.get(i);
                    assertTrue(f.await(60, TimeUnit.SECONDS), "sync send " + i + " not acknowledged");
                    assertTrue(f.isSuccess(), "sync send " + i + ": " + f.cause());
                }
                peer.awaitLine("RECEIVED");
                for (Endpoint ep : eps) {
                    assertTrue(!ep.errorFuture().isDone(), () -> ep + " failed: " + ep.errorFuture().cause());
                }
                long t2 = System.nanoTime();
                List<Future<Void>> closes = new ArrayList<>();
                for (Endpoint ep : eps) {
                    closes.add(ep.close());
                }
                for (var c : closes) {
                    assertTrue(c.await(60, TimeUnit.SECONDS), "close not completed");
                }
                long closeMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t2);
                peer.awaitLine("ALL CLOSED");
                for (Endpoint ep : eps) {
                    assertTrue(ep.errorFuture().isSuccess(), () -> ep + ": " + ep.errorFuture().cause());
                }
                System.out.println(String.format(Locale.ROOT,
                        "WIREUP " + lanes + " one at a time: %d endpoints in %d ms; per endpoint median %.1f us, p99 %.1f us, "
                                + "max %.1f us", ENDPOINTS, sequentialMs, us(oneAtATime, 50), us(oneAtATime, 99),
                        oneAtATime.getMaxValue() / 1e3));
                System.out.println(String.format(Locale.ROOT,
                        "WIREUP " + lanes + " burst of %d at once: all in %d ms; per endpoint median %.1f us, p99 %.1f us, "
                                + "max %.1f us", ENDPOINTS, burstMs, us(burst, 50), us(burst, 99),
                        burst.getMaxValue() / 1e3));
                assertEquals(connect.equals("p2p"), eps.get(0).describeLanes().contains("(p2p)"), "lane kind");
                assertTrue(eps.get(0).describeLanes().contains(tls), () -> "lanes: " + eps.get(0).describeLanes());
                System.out.println("CLOSE " + lanes + " " + eps.size() + " endpoints gracefully: " + closeMs + " ms");
            } finally {
                w.close().get(60, TimeUnit.SECONDS);
            }
            assertEquals(0, peer.waitFor(60), () -> "peer exit code; stderr:\n" + peer.stderr());
        }
    }

    private static double us(Histogram h, double percentile) {
        return h.getValueAtPercentile(percentile) / 1e3;
    }
}
