package io.nucx.it;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.nucx.Endpoint;
import io.nucx.NucxBootstrap;
import io.nucx.Worker;
import io.nucx.WorkerAddress;
import io.nucx.protocol.select.ProtoTable;
import io.nucx.protocol.select.SelectionKey;
import io.nucx.protocol.tag.EagerProtocols;
import io.nucx.protocol.tag.RndvProtocols;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A 64 MiB message between two JVMs over tcp: the cost model's threshold (not a setting) sends it by rendezvous,
 * and the peer checks every byte.
 */
@Timeout(180)
class TwoProcessRendezvousTest {

    @Test
    void aSixtyFourMebibyteMessageGoesByRendezvousAndArrivesIntact() throws Exception {
        int size = 64 << 20;
        try (PeerProcess peer = PeerProcess.start(TagPeer.class, Map.of("NUCX_TLS", "tcp"), "2",
                Integer.toString(size))) {
            WorkerAddress peerAddress = WorkerAddress.fromHex(peer.awaitLine("ADDRESS"));
            Worker worker = new NucxBootstrap().name("sender").config("TLS", "tcp").start();
            try {
                var report = worker.tagRecv(TagPeer.REPORT_TAG, -1L);
                Endpoint ep = worker.connect(peerAddress);
                for (int i = 0; i < 2; i++) {
                    assertTrue(ep.tagSend(i, MessagePlan.content(i, size)).await(120, TimeUnit.SECONDS));
                }
                String text = TagPeer.awaitReport(report, 120);
                assertEquals("OK 2 " + 2L * size, text, () -> "peer reports: " + text + "\n" + peer.stderr());
                assertEquals(2, worker.counters().count(RndvProtocols.TAG_RNDV.name()), "sent by rendezvous");
                assertEquals(0, worker.counters().count(EagerProtocols.MULTI_BCOPY.name()), "not eagerly");
            } finally {
                worker.close().get(10, TimeUnit.SECONDS);
            }
            assertEquals(0, peer.waitFor(60), () -> "peer exit code; stderr:\n" + peer.stderr());
        }
    }

    /** Both sides of the cost model's eager/rendezvous crossover, read from the sender's own table. */
    @Test
    void theSizesEitherSideOfTheComputedThresholdTakeEagerAndRendezvous() throws Exception {
        Worker worker = new NucxBootstrap().name("sender").config("TLS", "tcp").start();
        try {
            // The peer runs the same tcp iface on this host, so its table equals the one to our own address.
            ProtoTable t = worker.protocolTable(worker.address(), SelectionKey.MemoryType.HEAP);
            long threshold = t.entries().stream().filter(e -> e.candidate().protocol().name().equals("tag/rndv"))
                    .findFirst().orElseThrow().start();
            assertTrue(threshold > 65536 && threshold < (256 << 20), "threshold " + threshold);
            String sizesArg = (threshold - 1) + "," + threshold;
            try (PeerProcess peer = PeerProcess.start(TagPeer.class, Map.of("NUCX_TLS", "tcp"), "2", sizesArg)) {
                WorkerAddress peerAddress = WorkerAddress.fromHex(peer.awaitLine("ADDRESS"));
                var report = worker.tagRecv(TagPeer.REPORT_TAG, -1L);
                Endpoint ep = worker.connect(peerAddress);
                assertTrue(ep.tagSend(0, MessagePlan.content(0, (int) threshold - 1)).await(60, TimeUnit.SECONDS));
                assertTrue(ep.tagSend(1, MessagePlan.content(1, (int) threshold)).await(60, TimeUnit.SECONDS));
                String text = TagPeer.awaitReport(report, 60);
                assertEquals("OK 2 " + (2 * threshold - 1), text, () -> "peer: " + text + "\n" + peer.stderr());
                assertEquals(1, worker.counters().count(EagerProtocols.MULTI_BCOPY.name()), "threshold - 1: eager");
                assertEquals(1, worker.counters().count(RndvProtocols.TAG_RNDV.name()), "threshold: rendezvous");
                assertEquals(0, peer.waitFor(60), () -> "peer exit code; stderr:\n" + peer.stderr());
            }
        } finally {
            worker.close().get(10, TimeUnit.SECONDS);
        }
    }

    /**
     * Direct memory over tcp, whose table has the eager protocols and the rendezvous: the sizes on both sides of each
     * boundary of the sender's own table (short / one frame / multi-fragment / rendezvous; no zero-copy, which on tcp
     * costs an acknowledgement more than the copy protocols' writes from the same memory), sent to another JVM; the content is checked there and each size went by the protocol its table
     * entry names (the sender's per-protocol counters).
     */
    @Test
    void everyBoundaryOfTheDirectMemoryTableTakesTheProtocolItsEntryNames() throws Exception {
        Worker worker = new NucxBootstrap().name("sender").config("TLS", "tcp").start();
        try {
            ProtoTable t = worker.protocolTable(worker.address(), SelectionKey.MemoryType.DIRECT);
            List<ProtoTable.Entry> entries = t.entries();
            assertTrue(entries.stream().anyMatch(e -> e.candidate().protocol().name().equals("egr/multi/bcopy")),
                    () -> t.format("direct"));
            assertTrue(entries.stream().anyMatch(e -> e.candidate().protocol().name().equals("tag/rndv")),
                    () -> t.format("direct"));
            List<Integer> sizes = new ArrayList<>();
            Map<String, Long> expected = new TreeMap<>();
            for (int k = 1; k < entries.size(); k++) {
                long b = entries.get(k).start();
                assertTrue(b < (64 << 20), "boundary " + b);
                sizes.add((int) b - 1);
                expected.merge(entries.get(k - 1).candidate().protocol().name(), 1L, Long::sum);
                sizes.add((int) b);
                expected.merge(entries.get(k).candidate().protocol().name(), 1L, Long::sum);
            }
            String sizesArg = String.join(",", sizes.stream().map(String::valueOf).toList());
            try (PeerProcess peer = PeerProcess.start(TagPeer.class, Map.of("NUCX_TLS", "tcp"),
                    Integer.toString(sizes.size()), sizesArg)) {
                WorkerAddress peerAddress = WorkerAddress.fromHex(peer.awaitLine("ADDRESS"));
                var report = worker.tagRecv(TagPeer.REPORT_TAG, -1L);
                Endpoint ep = worker.connect(peerAddress);
                long total = 0;
                for (int i = 0; i < sizes.size(); i++) {
                    ByteBuf heap = MessagePlan.content(i, sizes.get(i));
                    ByteBuf direct = Unpooled.directBuffer(sizes.get(i))
                            .writeBytes(heap);
                    heap.release();
                    assertTrue(ep.tagSend(i, direct).await(60, TimeUnit.SECONDS), "send " + i);
                    total += sizes.get(i);
                }
                String text = TagPeer.awaitReport(report, 60);
                assertEquals("OK " + sizes.size() + " " + total, text, () -> "peer: " + text + "\n" + peer.stderr());
                Map<String, Long> counted = new TreeMap<>();
                for (String name : expected.keySet()) {
                    counted.put(name, worker.counters().count(name));
                }
                // egr/short also carries nothing else here: the report comes the other way
                assertEquals(expected, counted, () -> t.format("direct") + "\nsizes " + sizes);
                assertEquals(0, peer.waitFor(60), () -> "peer exit code; stderr:\n" + peer.stderr());
            }
        } finally {
            worker.close().get(10, TimeUnit.SECONDS);
        }
    }
}
