package io.nucx.wireup;

import io.netty.channel.ChannelFuture;
import io.netty.util.concurrent.Future;
import io.nucx.Endpoint;
import io.nucx.protocol.tag.TagMessage;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.nucx.wireup.TestWorkers.assertPattern;
import static io.nucx.wireup.TestWorkers.pattern;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A worker on two networks (NUCX_TCP_BIND_ADDR lists two addresses: one tcp iface each, here two loopback addresses)
 * in error mode failover: when the lane on the first network is lost mid-stream, the second network carries on, as
 * an AM_BW lane that takes over or as a replacement the dialling side connects. Failover excludes the lost lane by
 * transport and device, so another device of the same transport may replace it. A lane that goes silent instead (a
 * network cut: no FIN, no RST) is closed by keepalive after NUCX_KEEPALIVE_TIMEOUT, and failover does the rest.
 */
@Timeout(120)
class TcpTwoNetworksFailoverTest {

    private static final long TAG = 0x2e7;

    @RegisterExtension
    final TestWorkers workers = new TestWorkers();

    @ParameterizedTest(name = "{0} lane(s)")
    @ValueSource(ints = {1, 2})
    void losingTheFirstNetworksLaneMovesTheEndpointToTheSecond(int lanes) throws Exception {
        acrossTheLoss(lanes, false);
    }

    @ParameterizedTest(name = "{0} lane(s)")
    @ValueSource(ints = {1, 2})
    void aSilentFirstNetworkIsClosedByKeepaliveAndTheEndpointMovesToTheSecond(int lanes) throws Exception {
        acrossTheLoss(lanes, true);
    }

    /**
     * A stream from a to b; a third of the way, a's lane on the first network is closed, or ({@code silently}) stops
     * reading, as when the network vanishes under it: nothing more comes from b there, keepalive must notice.
     */
    private void acrossTheLoss(int lanes, boolean silently) throws Exception {
        String[] settings = {"TLS", "tcp", "TCP_BIND_ADDR", "127.0.0.1,127.0.0.2", "ERR_MODE", "failover",
                "MAX_RNDV_LANES", String.valueOf(lanes), "RNDV_THRESH", "32k", "KEEPALIVE_INTERVAL", "100ms",
                "KEEPALIVE_TIMEOUT", "500ms"};
        DefaultWorker a = workers.start("a", settings);
        DefaultWorker b = workers.start("b", settings);
        assertEquals(2, a.address().entries().size(), "one tcp iface per address");
        Endpoint ab = a.connect(b.address());
        ab.wireupFuture().get(30, TimeUnit.SECONDS);
        // "tcp/lo" and "tcp/127.0.0.2" here (an address no interface carries is named by itself)
        String first = "tcp/" + a.ifaces().get(0).device().name();
        String second = "tcp/" + a.ifaces().get(1).device().name();
        assertTrue(!first.equals(second), first);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (ab.laneNames().get().size() < lanes && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertEquals(lanes == 1 ? List.of(first) : List.of(first, second), ab.laneNames().get());
        int count = 3000;
        List<Future<TagMessage>> recvs = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            recvs.add(b.tagRecv(TAG, -1L));
        }
        List<ChannelFuture> sends = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            sends.add(ab.tagSend(TAG, pattern(i, 1000 + i % 50_000)));
            if (i == count / 3 && silently) { // a hears nothing more on the first network's lane
                ab.eventLoop().submit(() -> TestWorkers.impl(ab).lanes().am().channel().config().setAutoRead(false))
                        .sync();
            } else if (i == count / 3) {
                ab.closeLane(0).sync(); // the dialling side loses the first network's lane
            }
            if (i % 500 == 499) {
                sends.get(i).await(30, TimeUnit.SECONDS);
            }
        }
        for (int i = 0; i < count; i++) {
            TagMessage m = recvs.get(i).get(30, TimeUnit.SECONDS);
            try {
                assertPattern(i, 1000 + i % 50_000, m.content());
            } finally {
                m.release();
            }
        }
        for (ChannelFuture f : sends) {
            assertTrue(f.await(10, TimeUnit.SECONDS) && f.isSuccess(), () -> "send failed: " + f.cause());
        }
        assertTrue(ab.isActive(), "the endpoint goes on");
        assertEquals(second, ab.eventLoop().submit(() -> TestWorkers.impl(ab).lanes().am().name()).get());
        assertTrue(a.counters().count(FailoverReliability.FAILOVER_COUNTER) >= 1);
        assertEquals(silently ? 1 : 0, a.counters().count(EndpointLifecycle.SILENT_LANE_COUNTER),
                "keepalive closed the silent lane, and only it");
    }
}
