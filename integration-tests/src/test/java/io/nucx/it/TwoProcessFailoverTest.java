package io.nucx.it;

import io.netty.channel.ChannelFuture;
import io.nucx.Endpoint;
import io.nucx.NucxBootstrap;
import io.nucx.Worker;
import io.nucx.WorkerAddress;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Lane failover between two JVMs (error mode failover, shm and tcp): mid-stream the shm lane is taken down, by the
 * receiving process or by the sender, and every message still arrives exactly once, in order, intact, with every
 * send completing, over tcp. With two lanes the tcp AM_BW lane takes over; with one the side that dialled connects a
 * tcp lane afresh.
 */
@Timeout(240)
class TwoProcessFailoverTest {

    private static final int MESSAGES = 6000;

    @RegisterExtension
    final OpenedResources opened = new OpenedResources();

    private static Map<String, String> settings(int lanes) {
        return Map.of("NUCX_TLS", "shm,tcp", "NUCX_ERR_MODE", "failover", "NUCX_MAX_RNDV_LANES",
                Integer.toString(lanes), "NUCX_MULTI_LANE_MAX_RATIO", "20", "NUCX_RNDV_THRESH", "256k");
    }

    @ParameterizedTest(name = "{0} lane(s), dropped by the {1}")
    @CsvSource({"2, receiver", "1, receiver", "1, sender"})
    void theShmLaneLostMidStreamFailsOverToTcpWithEveryMessageOnce(int lanes, String dropper) throws Exception {
        boolean receiverDrops = dropper.equals("receiver");
        PeerProcess peer = PeerProcess.start(FailoverPeer.class, settings(lanes), Integer.toString(MESSAGES),
                receiverDrops ? "drop" : "keep");
        opened.peer(peer);
        NucxBootstrap b = new NucxBootstrap().name("failover-sender");
        settings(lanes).forEach((k, v) -> b.config(k.substring("NUCX_".length()), v));
        Worker w = b.start();
        opened.worker(w);
        Endpoint ep = w.connect(WorkerAddress.fromHex(peer.awaitLine("ADDRESS")));
        ep.wireupFuture().sync();
        assertTrue(ep.laneNames().get().get(0).startsWith("shm/"), "starts on shm");
        List<ChannelFuture> sends = new ArrayList<>();
        for (int i = 0; i < MESSAGES; i++) {
            sends.add(ep.tagSend(FailoverPeer.TAG, MessagePlan.content(i, FailoverPeer.size(i))));
            if (!receiverDrops && i == MESSAGES / 3) {
                ep.closeLane(0).get(10, TimeUnit.SECONDS);
            }
            if (i % 200 == 199) {
                sends.get(i).await(60, TimeUnit.SECONDS); // bounded in flight; completes when the peer confirmed
            }
        }
        // Behind everything, the fence: a duplicate (a resend on the lane that took over) would reach the peer first.
        sends.add(ep.tagSend(FailoverPeer.FENCE, MessagePlan.content(0, 8)));
        if (receiverDrops) {
            assertTrue(peer.awaitLine("DROPPED").startsWith("shm/"));
        }
        assertTrue(peer.awaitLine("LANES").startsWith("[tcp/"), "the peer ends on tcp");
        assertEquals("OK", peer.awaitLine("REPORT"), "peer: every message once, in order, intact");
        for (int i = 0; i <= MESSAGES; i++) {
            ChannelFuture f = sends.get(i);
            assertTrue(f.await(30, TimeUnit.SECONDS) && f.isSuccess(), "send " + i + ": " + f.cause());
        }
        assertTrue(ep.isActive(), "the endpoint never failed");
        assertTrue(ep.laneNames().get().get(0).startsWith("tcp/"), "ends on tcp");
        assertTrue(w.counters().count("lane/failover") >= 1);
        System.out.println("failover (" + lanes + " lane(s), dropped by the " + dropper + "): "
                + w.counters().count("lane/resent") + " frame(s) sent again");
        assertTrue(ep.close().await(60, TimeUnit.SECONDS));
        assertEquals(0, peer.waitFor(60), () -> "peer exit code; stderr:\n" + peer.stderr());
    }
}
