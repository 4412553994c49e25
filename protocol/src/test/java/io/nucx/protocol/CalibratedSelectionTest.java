package io.nucx.protocol;

import io.netty.buffer.ByteBufAllocator;
import io.netty.util.concurrent.ImmediateEventExecutor;
import io.nucx.protocol.select.PerfProfile;
import io.nucx.protocol.select.ProtoTable;
import io.nucx.protocol.select.SelectionKey;
import io.nucx.protocol.tag.EagerProtocols;
import io.nucx.protocol.tag.RndvProtocols;
import io.nucx.transport.Capability;
import io.nucx.transport.IfaceAttributes;
import io.nucx.transport.NucxConfigException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;

import static io.nucx.transport.testing.ConfigAssertions.assertMessageNames;
import static io.nucx.transport.testing.ConfigAssertions.config;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A worker's tables with a performance profile (NUCX_PERF_PROFILE): the cost model takes the profile's figures, so the
 * chosen protocol changes where the measured figures move a crossover, and a file that cannot be used stops start-up.
 */
class CalibratedSelectionTest {

    /** tcp's static figures (UCX's): 5.2 us latency, 50 us overhead; zero-copy from 1 KiB of native memory. */
    private static final EndpointConfig TCP = new EndpointConfig("tcp/lo", new IfaceAttributes(EnumSet.of(
            Capability.AM_SHORT, Capability.AM_BCOPY, Capability.AM_ZCOPY), 8192, 65536, 256, 5.2e-6, 0, 0, 1.2e9,
            50e-6, 0, 0, 1024));
    private static final long TAG_DIRECT = SelectionKey.pack(SelectionKey.Operation.TAG_SEND, 0,
            SelectionKey.DatatypeClass.CONTIG, SelectionKey.MemoryType.DIRECT, SelectionKey.Locality.INTER_NODE);

    private static ProtoTable table(ProtocolSettings settings) {
        WorkerProtocols w = new WorkerProtocols(ImmediateEventExecutor.INSTANCE, ByteBufAllocator.DEFAULT, settings,
                1, new ProtocolCounters());
        return w.selectionCache(TCP, SelectionKey.Locality.INTER_NODE).table(TAG_DIRECT);
    }

    /** Where the rendezvous takes over from multi-fragment eager. */
    private static ProtoTable.Entry rendezvous(ProtoTable t) {
        return t.entries().stream().filter(e -> e.candidate().protocol().name().equals("tag/rndv")).findFirst()
                .orElseThrow(() -> new AssertionError("no rendezvous range\n" + t.format("tcp/lo")));
    }

    /**
     * The rendezvous pays two more latencies and the RTS/RTR overheads, and saves per-fragment overhead on the
     * receiver (its data come in larger placed frames), so where it takes over from eager depends on the lane's
     * figures: a profile with a tenth of UCX's tcp overhead (50 us) and less latency moves the threshold, and
     * multi-fragment eager holds below it in both tables. Neither table has eager zero-copy: on tcp the copy
     * protocols write native memory from the sender's buffer too, and zero-copy would add its acknowledgement.
     */
    @Test
    void aProfileMovesTheRendezvousThresholdToWhereItsFiguresPutIt(@TempDir Path dir) throws Exception {
        // No bound on eager sizes (NUCX_EAGER_MAX): the figures alone place the crossovers.
        ProtoTable staticTable = table(ProtocolSettings.from(config(Map.of("EAGER_MAX", "1g")),
                ProtocolRegistry.DEFAULT));
        Path file = dir.resolve("profile.txt");
        PerfProfile.builder("test").copyBandwidth(5e9)
                .figure("tcp/lo", PerfProfile.Figure.OVERHEAD, 2e-6)
                .figure("tcp/lo", PerfProfile.Figure.LATENCY, 3.3e-6)
                .figure("tcp/lo", PerfProfile.Figure.BANDWIDTH, 2.5e9)
                .build().write(file, List.of("synthetic"));
        ProtocolSettings settings = ProtocolSettings.from(config(Map.of("PERF_PROFILE", file.toString(),
                "EAGER_MAX", "1g")), ProtocolRegistry.DEFAULT);
        assertEquals(file.toString(), settings.profile().source());
        ProtoTable calibrated = table(settings);
        String both = staticTable.format("static") + calibrated.format("calibrated");
        long staticStart = rendezvous(staticTable).start();
        long calibratedStart = rendezvous(calibrated).start();
        assertTrue(calibratedStart != staticStart, both);
        for (ProtoTable t : List.of(staticTable, calibrated)) {
            long start = rendezvous(t).start();
            assertSame(EagerProtocols.MULTI_BCOPY, t.lookup(start - 1).protocol(), both);
            assertTrue(t.entries().stream().noneMatch(e -> e.candidate().protocol().name().startsWith("egr/")
                    && e.candidate().protocol().name().endsWith("/zcopy")), both);
        }
    }

    /**
     * A measured rendezvous surcharge (what the rendezvous cost beyond eager that the lane's figures do not explain)
     * raises the rendezvous line by itself (it was measured against the line as the tables hold it, bias and all), so
     * eager holds to where the bias outweighs it: 20 us more is 1 % of a 2 ms eager message.
     */
    @Test
    void aRendezvousSurchargeKeepsEagerUpToWhereTheBiasOutweighsIt(@TempDir Path dir) throws Exception {
        ProtoTable staticTable = table(ProtocolSettings.from(config(Map.of()), ProtocolRegistry.DEFAULT));
        Path file = dir.resolve("profile.txt");
        PerfProfile.builder("test")
                .figure("tcp/lo", PerfProfile.Figure.RNDV_COST, 20e-6)
                .figure("tcp/lo", PerfProfile.Figure.RNDV_GROWTH, 0)
                .build().write(file, List.of("synthetic"));
        // No bound on eager sizes here: the model alone places the crossover (NUCX_EAGER_MAX's test is below).
        ProtoTable surcharged = table(ProtocolSettings.from(config(Map.of("PERF_PROFILE", file.toString(),
                "EAGER_MAX", "1g")), ProtocolRegistry.DEFAULT));
        String both = staticTable.format("static") + surcharged.format("surcharged");
        long start = rendezvous(surcharged).start();
        assertTrue(start > rendezvous(staticTable).start(), both);
        assertSame(EagerProtocols.MULTI_BCOPY, surcharged.lookup(start - 1).protocol(), both);
        double eager = cost(surcharged, "egr/multi/bcopy", start);
        double rndv = cost(surcharged, "tag/rndv", start);
        assertTrue(rndv <= eager && eager - rndv < 0.01 * eager, "they cross there: " + rndv + " " + eager + "\n"
                + both);
        assertEquals(20e-6, rndv - cost(staticTable, "tag/rndv", start), 1e-12, "the surcharge, as measured");
        assertTrue(eager > 20e-6 / 0.01 * 0.9, "near 2 ms of eager: " + eager);
    }

    /**
     * A measured eager surcharge (what copy sends took beyond the lane's figures) is charged to every eager protocol
     * from its size on, once per message: smaller messages and the rendezvous keep their prices, and the rendezvous
     * takes over sooner.
     */
    @Test
    void anEagerSurchargeChargesEveryEagerProtocolFromItsSizeOn(@TempDir Path dir) throws Exception {
        ProtoTable staticTable = table(ProtocolSettings.from(config(Map.of("EAGER_MAX", "1g")),
                ProtocolRegistry.DEFAULT));
        Path file = dir.resolve("profile.txt");
        PerfProfile.builder("test")
                .figure("tcp/lo", PerfProfile.Figure.EAGER_COST, 30e-6)
                .figure("tcp/lo", PerfProfile.Figure.EAGER_FROM, 4096)
                .build().write(file, List.of("synthetic: copy sends 30 us dearer than their figures from 4 KiB on"));
        ProtoTable charged = table(ProtocolSettings.from(config(Map.of("PERF_PROFILE", file.toString(),
                "EAGER_MAX", "1g")), ProtocolRegistry.DEFAULT));
        String both = staticTable.format("static") + charged.format("eager charged");
        for (String eager : List.of("egr/short", "egr/single/bcopy", "egr/multi/bcopy")) {
            assertEquals(cost(staticTable, eager, 4095), cost(charged, eager, 4095), 1e-12, eager + " below 4 KiB");
            assertEquals(30e-6, cost(charged, eager, 4096) - cost(staticTable, eager, 4096), 1e-12, eager + " at 4 KiB");
        }
        assertEquals(30e-6, cost(charged, "egr/multi/bcopy", 1 << 20) - cost(staticTable, "egr/multi/bcopy", 1 << 20),
                1e-12, "once per message, not per fragment");
        assertEquals(cost(staticTable, "tag/rndv", 1 << 20), cost(charged, "tag/rndv", 1 << 20), 1e-12,
                "the rendezvous as priced");
        assertTrue(rendezvous(charged).start() < rendezvous(staticTable).start(), both);
    }

    /**
     * Where the measured line is below 0 (the rendezvous was the cheaper against eager than the model prices: tcp's
     * eager fragments), its depth is charged to the multi-fragment eager protocols instead, so the rendezvous takes
     * over sooner; the rendezvous and the one-fragment protocols keep their prices.
     */
    @Test
    void aLineBelowZeroChargesEagersFragmentsAndMovesTheRendezvousDown(@TempDir Path dir) throws Exception {
        ProtoTable staticTable = table(ProtocolSettings.from(config(Map.of("EAGER_MAX", "1g")),
                ProtocolRegistry.DEFAULT));
        Path file = dir.resolve("profile.txt");
        double perByte = 5e-11; // 52 us a MiB
        PerfProfile.builder("test")
                .figure("tcp/lo", PerfProfile.Figure.RNDV_COST, 2e-6)
                .figure("tcp/lo", PerfProfile.Figure.RNDV_GROWTH, -perByte)
                .build().write(file, List.of("synthetic: eager dearer than modelled from 40 KB on"));
        ProtoTable charged = table(ProtocolSettings.from(config(Map.of("PERF_PROFILE", file.toString(),
                "EAGER_MAX", "1g")), ProtocolRegistry.DEFAULT));
        String both = staticTable.format("static") + charged.format("eager charged");
        long start = rendezvous(charged).start();
        assertTrue(start < rendezvous(staticTable).start(), both);
        assertSame(EagerProtocols.MULTI_BCOPY, charged.lookup(start - 1).protocol(), both);
        long size = start - 1;
        assertEquals(perByte * size - 2e-6, cost(charged, "egr/multi/bcopy", size)
                - cost(staticTable, "egr/multi/bcopy", size), 1e-12, "the line's depth, on eager's fragments");
        assertEquals(cost(staticTable, "tag/rndv", start), cost(charged, "tag/rndv", start), 1e-12,
                "the rendezvous as priced");
        long single = 60_000; // one fragment, beyond where the line goes below 0
        assertEquals(cost(staticTable, "egr/single/bcopy", single), cost(charged, "egr/single/bcopy", single), 1e-12,
                "one fragment as priced");
        long shallow = 30_000; // multi-fragment eager (forced by size only in the model) above the line
        assertEquals(cost(staticTable, "egr/multi/bcopy", shallow), cost(charged, "egr/multi/bcopy", shallow), 1e-12,
                "nothing where the line is above 0");
    }

    /**
     * However cheap the model prices eager, a message over NUCX_EAGER_MAX (1 MiB by default) goes by rendezvous when
     * NUCX_RNDV_THRESH is automatic: an eager send completes once its bytes are out, so a sender ahead of its receiver
     * would pile them up there. Below the bound cost still decides; a threshold of the user's, or protocols that leave
     * the rendezvous out, are obeyed as before.
     */
    @Test
    void eagerCarriesNothingOverEagerMaxWhereARendezvousCan(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("profile.txt");
        PerfProfile.builder("test")
                .figure("tcp/lo", PerfProfile.Figure.RNDV_COST, 20e-6)
                .figure("tcp/lo", PerfProfile.Figure.RNDV_GROWTH, 0)
                .build().write(file, List.of("synthetic: eager cheaper up to about 2.4 MB"));
        String profile = file.toString();
        ProtoTable unbounded = table(ProtocolSettings.from(config(Map.of("PERF_PROFILE", profile, "EAGER_MAX", "1g")),
                ProtocolRegistry.DEFAULT));
        ProtoTable bounded = table(ProtocolSettings.from(config(Map.of("PERF_PROFILE", profile)),
                ProtocolRegistry.DEFAULT));
        String both = unbounded.format("unbounded") + bounded.format("bounded (1 MiB)");
        assertTrue(rendezvous(unbounded).start() > 2 << 20, both);
        assertEquals((1 << 20) + 1, rendezvous(bounded).start(), both);
        assertSame(EagerProtocols.MULTI_BCOPY, bounded.lookup(1 << 20).protocol(), both);
        assertSame(RndvProtocols.TAG_RNDV, bounded.lookup(64L << 20).protocol(), both);
        // Below the bound the tables agree: cost decides.
        for (ProtoTable.Entry e : unbounded.entries()) {
            if (e.end() <= 1 << 20) {
                assertSame(e.candidate().protocol(), bounded.lookup(e.end()).protocol(), both);
            }
        }
        ProtoTable smaller = table(ProtocolSettings.from(config(Map.of("PERF_PROFILE", profile, "EAGER_MAX",
                "256k")), ProtocolRegistry.DEFAULT));
        assertEquals((256 << 10) + 1, rendezvous(smaller).start(), smaller.format("256k"));
        ProtoTable userThreshold = table(ProtocolSettings.from(config(Map.of("PERF_PROFILE", profile,
                "RNDV_THRESH", "4m")), ProtocolRegistry.DEFAULT));
        assertEquals(4L << 20, rendezvous(userThreshold).start(), userThreshold.format("RNDV_THRESH=4m"));
        ProtoTable eagerOnly = table(ProtocolSettings.from(config(Map.of("PERF_PROFILE", profile, "PROTOS",
                "egr/*")), ProtocolRegistry.DEFAULT));
        assertSame(EagerProtocols.MULTI_BCOPY, eagerOnly.lookup(64L << 20).protocol(), eagerOnly.format("egr/*"));
    }

    @Test
    void aBadEagerMaxStopsStartUpNamingIt() {
        assertMessageNames(assertThrows(NucxConfigException.class, () -> ProtocolSettings.from(
                config(Map.of("EAGER_MAX", "lots")), ProtocolRegistry.DEFAULT)), "EAGER_MAX", "lots");
    }

    /** What {@code protocol}'s candidate in {@code t} prices a {@code size}-byte message at. */
    private static double cost(ProtoTable t, String protocol, long size) {
        double cost = t.candidates().stream().filter(c -> c.protocol().name().equals(protocol)).findFirst()
                .orElseThrow().perf().singleCost(size);
        assertFalse(Double.isNaN(cost), protocol + " covers " + size + " B");
        return cost;
    }

    @Test
    void aProfileWithoutFiguresForTheLaneLeavesTheTableAsTheStaticOne(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("profile.txt");
        PerfProfile.builder("test").figure("shm", PerfProfile.Figure.OVERHEAD, 1e-9).build().write(file, List.of());
        ProtoTable withShmOnly = table(ProtocolSettings.from(config(Map.of("PERF_PROFILE", file.toString())),
                ProtocolRegistry.DEFAULT));
        ProtoTable none = table(ProtocolSettings.from(config(Map.of()), ProtocolRegistry.DEFAULT));
        assertEquals(none.format("t"), withShmOnly.format("t"));
    }

    @Test
    void aMalformedProfileStopsStartUpNamingTheSettingTheFileTheLineAndTheFault(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("bad.txt");
        Files.writeString(file, "format = " + PerfProfile.FORMAT + "\ntcp/lo.latency = 4us\n");
        NucxConfigException e = assertThrows(NucxConfigException.class, () -> ProtocolSettings.from(
                config(Map.of("PERF_PROFILE", file.toString())), ProtocolRegistry.DEFAULT));
        assertMessageNames(e, "PERF_PROFILE", file + " line 2", "'tcp/lo.latency' is not a number: '4us'");
        Path missing = dir.resolve("missing.txt");
        NucxConfigException gone = assertThrows(NucxConfigException.class, () -> ProtocolSettings.from(
                config(Map.of("PERF_PROFILE", missing.toString())), ProtocolRegistry.DEFAULT));
        assertMessageNames(gone, "PERF_PROFILE", "cannot read performance profile " + missing);
        assertTrue(ProtocolSettings.from(config(Map.of()), ProtocolRegistry.DEFAULT).profile().isEmpty(),
                "none by default");
    }
}
