package io.nucx.it;

import io.nucx.ErrorMode;
import io.nucx.NucxBootstrap;
import io.nucx.Worker;
import io.nucx.WorkerAddress;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * shm joins processes of one user only: a process of another user (nobody, uid 65534, by setpriv) cannot connect to
 * our iface's socket (0600: the kernel refuses it) and its worker chooses tcp, not shm, to ours; ours, although root
 * could open its files, does not choose shm to it either (its socket is not ours).
 */
@Timeout(120)
class ShmOtherUserTest {

    @Test
    void anotherUserGetsNoShmLaneEitherWay() throws Exception {
        assumeTrue(Files.readAllLines(Path.of("/proc/self/status")).stream()
                .filter(l -> l.startsWith("Uid:")).findFirst().orElseThrow().split("\\s+")[2].equals("0"),
                "needs root to start the peer as another user");
        Worker worker = new NucxBootstrap().name("owner").config("TLS", "shm,tcp").start();
        try {
            WorkerAddress.Entry shm = worker.address().entries().stream().filter(e -> e.transport().equals("shm"))
                    .findFirst().orElseThrow();
            ByteBuffer b = ByteBuffer.wrap(shm.ifaceAddress()).order(ByteOrder.LITTLE_ENDIAN);
            Path socket = Path.of("/dev/shm", "nucx-" + Integer.toUnsignedLong(b.getInt()) + "-"
                    + Integer.toUnsignedLong(b.getInt()) + ".sock");
            assertTrue(Files.exists(socket), socket.toString());
            try (PeerProcess peer = PeerProcess.startAs(65534, ShmStranger.class, Map.of(),
                    worker.address().toHex(), socket.toString())) {
                WorkerAddress stranger = WorkerAddress.fromHex(peer.awaitLine("ADDRESS"));
                String connect = peer.awaitLine("CONNECT");
                assertTrue(connect.startsWith("refused") && connect.contains("Permission denied"),
                        "another user connected to our shm socket: " + connect);
                String lanes = peer.awaitLine("LANES");
                assertTrue(lanes.contains("tcp/") && !lanes.contains("shm/"), "the stranger's AM lane: " + lanes);
                String ours = worker.laneInfo(stranger, ErrorMode.PEER);
                assertTrue(ours.lines().filter(l -> l.contains("CHOSEN") && l.contains("AM lane"))
                        .noneMatch(l -> l.contains("shm/")), ours);
                assertEquals(0, peer.waitFor(60), () -> "peer exit code; stderr:\n" + peer.stderr());
            }
        } finally {
            worker.close().get(10, TimeUnit.SECONDS);
        }
    }
}
