package io.nucx.it;

import io.nucx.NucxBootstrap;
import io.nucx.Worker;
import io.nucx.WorkerAddress;
import io.nucx.examples.NucxMain;
import io.nucx.protocol.select.ProtoTable;
import io.nucx.protocol.select.SelectionKey;
import io.nucx.protocol.tag.RndvProtocols;
import io.nucx.transport.cma.Cma;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * rndv/get/zcopy between two JVMs on this host over tcp + cma: the receiver reads the sender's direct buffers with
 * process_vm_readv; over shm + cma, only where the ring's copies cost more. And the kernel's refusal: a receiver running as another, unprivileged user may not read the
 * sender (EPERM at lane selection); its endpoint says so and the messages still arrive, by RTR and AM fragments.
 */
@Timeout(300)
class TwoProcessCmaTest {

    private static final Map<String, String> TLS = Map.of("NUCX_TLS", "tcp,cma");

    @BeforeEach
    void cma() {
        assumeTrue(Cma.availability().isAvailable(), () -> Cma.availability().reason());
    }

    private static long getZcopyThreshold(Worker w, WorkerAddress peer) throws Exception {
        ProtoTable t = w.protocolTable(peer, SelectionKey.MemoryType.DIRECT);
        return t.entries().stream().filter(e -> e.candidate().protocol() == RndvProtocols.GET_ZCOPY).findFirst()
                .orElseThrow(() -> new AssertionError("no rndv/get/zcopy in\n" + t.format("to peer"))).start();
    }

    private static String join(int[] sizes) {
        return String.join(",", Arrays.stream(sizes).mapToObj(Integer::toString).toList());
    }

    @Test
    void fromJustAboveTheThresholdTo256MiBTheReceiverReadsTheSendersMemory() throws Exception {
        Worker worker = new NucxBootstrap().name("sender").config("TLS", "tcp,cma").start();
        try {
            // The peer runs the same transports on this host, so its address gives the same table as ours.
            long threshold = getZcopyThreshold(worker, worker.address());
            int[] sizes = {(int) threshold + 1, 1 << 20, 64 << 20, 256 << 20};
            try (PeerProcess peer = PeerProcess.start(TagPeer.class, TLS, Integer.toString(sizes.length),
                    join(sizes))) {
                WorkerAddress peerAddress = WorkerAddress.fromHex(peer.awaitLine("ADDRESS"));
                assertEquals(threshold, getZcopyThreshold(worker, peerAddress), "same table to the real peer");
                String report = TagPeer.sendAll(worker, peer, peerAddress, sizes);
                long total = Arrays.stream(sizes).asLongStream().sum();
                assertEquals("OK " + sizes.length + " " + total, report, () -> report + "\n" + peer.stderr());
                assertEquals(sizes.length, worker.counters().count(RndvProtocols.GET_ZCOPY.name()));
                assertEquals(0, worker.counters().count(RndvProtocols.TAG_RNDV.name()));
                assertEquals(0, worker.counters().count(RndvProtocols.GET_FALLBACK_COUNTER), "every offer read");
                String lanes = peer.awaitLine("LANES");
                assertEquals("rma=cma/memory refusal=null", lanes);
                String counters = peer.awaitLine("COUNTERS");
                assertTrue(counters.contains(RndvProtocols.RECV_GET_COUNTER + "=" + sizes.length), counters);
                assertTrue(!counters.contains(RndvProtocols.RECV_GET_FALLBACK_COUNTER + "=")
                        || counters.contains(RndvProtocols.RECV_GET_FALLBACK_COUNTER + "=0"), counters);
                assertEquals(0, peer.waitFor(60), () -> "peer exit code; stderr:\n" + peer.stderr());
            }
        } finally {
            worker.close().get(10, TimeUnit.SECONDS);
        }
    }

    /**
     * Over shm + cma the ring's copy rate, which each process measures at start, decides whether cma reads large
     * messages: set on both sides to 1000 GB/s the ring's two copies are cheaper than cma's read (its rates measured at
     * start too: 16-32 GB/s in cache here) at every size and the table has no rndv/get/zcopy; set to 2 GB/s cma reads
     * 1 MiB and 4 MiB messages. Both are real processes; their counters say which protocol carried the messages, and
     * every byte arrives.
     */
    @Test
    void overShmTheRingsCopyRateDecidesWhetherCmaReadsLargeMessages() throws Exception {
        int[] sizes = {1 << 20, 4 << 20};
        for (String rate : new String[] {"1000g", "2g"}) {
            boolean cma = rate.equals("2g");
            Worker worker = new NucxBootstrap().name("sender").config("TLS", "shm,cma").config("SHM_COPY_BW", rate)
                    .start();
            try (PeerProcess peer = PeerProcess.start(TagPeer.class, Map.of("NUCX_TLS", "shm,cma",
                    "NUCX_SHM_COPY_BW", rate), Integer.toString(sizes.length), join(sizes))) {
                WorkerAddress peerAddress = WorkerAddress.fromHex(peer.awaitLine("ADDRESS"));
                ProtoTable table = worker.protocolTable(peerAddress, SelectionKey.MemoryType.DIRECT);
                boolean offersGet = table.entries().stream()
                        .anyMatch(e -> e.candidate().protocol() == RndvProtocols.GET_ZCOPY);
                assertEquals(cma, offersGet, () -> rate + ":\n" + table.format("to peer"));
                String report = TagPeer.sendAll(worker, peer, peerAddress, sizes);
                long total = Arrays.stream(sizes).asLongStream().sum();
                assertEquals("OK " + sizes.length + " " + total, report, () -> report + "\n" + peer.stderr());
                assertEquals(cma ? sizes.length : 0, worker.counters().count(RndvProtocols.GET_ZCOPY.name()), rate);
                String counters = peer.awaitLine("COUNTERS");
                assertEquals(cma, counters.contains(RndvProtocols.RECV_GET_COUNTER + "=" + sizes.length),
                        () -> rate + ": " + counters);
                assertEquals(0, peer.waitFor(60), () -> "peer exit code; stderr:\n" + peer.stderr());
            } finally {
                worker.close().get(10, TimeUnit.SECONDS);
            }
        }
    }

    /**
     * The receiver runs as nobody (uid 65534) and the sender as root: root may read anyone (CAP_SYS_PTRACE), so the
     * sender offers get/zcopy, but the kernel refuses the receiver (different user, no capability): its endpoint has
     * no RMA lane and names EPERM, and it asks for every message by RTR; the data arrive by AM fragments (tag/rndv's
     * data path), byte for byte.
     */
    @Test
    void aReceiverTheKernelRefusesAsksByRtrAndEveryMessageArrives() throws Exception {
        assumeTrue(isRoot(), "needs root to start the peer as another user");
        Worker worker = new NucxBootstrap().name("sender").config("TLS", "tcp,cma").start();
        try {
            long threshold = getZcopyThreshold(worker, worker.address());
            int[] sizes = {(int) threshold + 1, 1 << 20, 16 << 20};
            try (PeerProcess peer = PeerProcess.startAs(65534, TagPeer.class, TLS, Integer.toString(sizes.length),
                    join(sizes))) {
                WorkerAddress peerAddress = WorkerAddress.fromHex(peer.awaitLine("ADDRESS"));
                String report = TagPeer.sendAll(worker, peer, peerAddress, sizes);
                long total = Arrays.stream(sizes).asLongStream().sum();
                assertEquals("OK " + sizes.length + " " + total, report, () -> report + "\n" + peer.stderr());
                String lanes = peer.awaitLine("LANES");
                assertTrue(lanes.startsWith("rma=null refusal=cma: process_vm_readv(pid "), lanes);
                assertTrue(lanes.contains("EPERM"), lanes);
                String counters = peer.awaitLine("COUNTERS");
                assertTrue(counters.contains(RndvProtocols.RECV_GET_FALLBACK_COUNTER + "=" + sizes.length), counters);
                assertTrue(!counters.contains(RndvProtocols.RECV_GET_COUNTER + "=")
                        || counters.contains(RndvProtocols.RECV_GET_COUNTER + "=0"), counters);
                assertEquals(sizes.length, worker.counters().count(RndvProtocols.GET_ZCOPY.name()),
                        "root may read the peer, so it offered its buffers");
                assertEquals(sizes.length, worker.counters().count(RndvProtocols.GET_FALLBACK_COUNTER),
                        "and heard an RTR for each offer");
                assertEquals(0, peer.waitFor(60), () -> "peer exit code; stderr:\n" + peer.stderr());
            }
        } finally {
            worker.close().get(10, TimeUnit.SECONDS);
        }
    }

    private static boolean isRoot() throws Exception {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("Uid:")) {
                return line.substring(4).trim().split("\\s+")[1].equals("0");
            }
        }
        return false;
    }

    /**
     * Over shm + cma, a cma read is priced for fresh data unless NUCX_CMA_DATA=same: a read of lines its owner has just
     * written also pays the two cross-core transfers the hand-off rate times. The figures are the host's shared ones
     * (NUCX_RATES_DIR), which a first process measures and writes; this test then rewrites them as another machine's
     * would read (cma's read at 10 GB/s, a copy handed between cores at 2 GB/s) and asks a third process, started with
     * them and shm's copies at 4 GiB/s, for its tables to the peer ({@code nucx info --proto}): with the same bytes
     * cma's read (0.1 ns a byte) beats the ring's two copies (0.47) for large messages; with fresh data (1.1 ns) it
     * never does.
     */
    @Test
    void overShmCmasReadIsPricedForFreshDataUnlessTheSettingSaysTheSameBytes(@TempDir Path rates) throws Exception {
        Map<String, String> env = new HashMap<>(Map.of("NUCX_TLS", "shm,cma", "NUCX_RATES_DIR",
                rates.toString(), "NUCX_SHM_COPY_BW", "4g"));
        try (PeerProcess peer = PeerProcess.start(TagPeer.class, env, "1")) {
            String address = peer.awaitLine("ADDRESS");
            rewriteShared(rates, "hand-off", "2.0E9");
            rewriteShared(rates, "cma-read", "1.0E10");
            for (String data : new String[] {"same", "fresh"}) {
                env.put("NUCX_CMA_DATA", data);
                try (PeerProcess info = PeerProcess.start(NucxMain.class, env, "info",
                        "--proto=" + address)) {
                    String tables = info.readToEnd();
                    assertEquals(0, info.waitFor(60), () -> "info exit code; stderr:\n" + info.stderr());
                    assertTrue(tables.contains("from direct memory"), () -> data + ": no tables printed:\n" + tables);
                    assertEquals(data.equals("same"), tables.contains(RndvProtocols.GET_ZCOPY.description()),
                            () -> "NUCX_CMA_DATA=" + data + ":\n" + tables);
                }
            }
        }
    }

    /** Rewrites the figures of the shared rates file named {@code name} in {@code dir}: its {@code values=} line. */
    private static void rewriteShared(Path dir, String name, String values) throws IOException {
        try (var files = Files.list(dir)) {
            Path file = files.filter(f -> f.getFileName().toString().contains("-" + name + "-")).findFirst()
                    .orElseThrow(() -> new AssertionError("no shared " + name + " figure in " + dir));
            String text = Files.readString(file);
            assertTrue(text.contains("\nvalues="), text);
            Files.writeString(file, text.replaceAll("\nvalues=[^\n]*", "\nvalues=" + values));
        }
    }
}
