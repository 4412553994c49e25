package io.nucx.protocol;

import io.netty.buffer.ByteBufAllocator;
import io.netty.util.concurrent.ImmediateEventExecutor;
import io.nucx.protocol.select.PerfProfile;
import io.nucx.protocol.select.ProtoTable;
import io.nucx.protocol.select.SelectionKey;
import io.nucx.protocol.tag.EagerProtocols;
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

    /** The first size sent zero-copy: copy protocols hold below it. */
    private static ProtoTable.Entry firstZcopy(ProtoTable t) {
        return t.entries().stream().filter(e -> e.candidate().protocol().name().startsWith("egr/")
                && e.candidate().protocol().name().endsWith("/zcopy")).findFirst()
                .orElseThrow(() -> new AssertionError("no zero-copy range\n" + t.format("tcp/lo")));
    }

    /**
     * Eager zero-copy saves the copy-in and pays an acknowledgement (two overheads and a latency), so it starts where
     * {@code size x (1 / copy bandwidth) = 2 overhead + latency}. With UCX's tcp figures (50 us overhead) that is past
     * 700 KB; with a profile measuring 2 us and 3.3 us on this machine, and 5 GB/s memcpy, it is 36,500 B: the profile
     * moves the crossover to where its figures put it.
     */
    @Test
    void aProfileMovesTheZeroCopyCrossoverToWhereItsFiguresPutIt(@TempDir Path dir) throws Exception {
        ProtoTable staticTable = table(ProtocolSettings.from(config(Map.of()), ProtocolRegistry.DEFAULT));
        double staticCross = (2 * 50e-6 + 5.2e-6) * 7000e6;
        assertEquals((long) Math.floor(staticCross - 0.5) + 1, firstZcopy(staticTable).start(),
                staticTable.format("static"));

        double ovh = 2e-6;
        double lat = 3.3e-6;
        double copy = 5e9;
        Path file = dir.resolve("profile.txt");
        PerfProfile.builder("test").copyBandwidth(copy)
                .figure("tcp/lo", PerfProfile.Figure.OVERHEAD, ovh)
                .figure("tcp/lo", PerfProfile.Figure.LATENCY, lat)
                .figure("tcp/lo", PerfProfile.Figure.BANDWIDTH, 2.5e9)
                .build().write(file, List.of("synthetic"));
        ProtocolSettings settings = ProtocolSettings.from(config(Map.of("PERF_PROFILE", file.toString())),
                ProtocolRegistry.DEFAULT);
        assertEquals(file.toString(), settings.profile().source());
        ProtoTable calibrated = table(settings);
        double cross = (2 * ovh + lat) * copy; // 36,500
        ProtoTable.Entry zcopy = firstZcopy(calibrated);
        assertEquals((long) Math.floor(cross - 0.5) + 1, zcopy.start(), calibrated.format("calibrated"));
        assertSame(EagerProtocols.SINGLE_ZCOPY, zcopy.candidate().protocol(), "inside one fragment");
        assertSame(EagerProtocols.SINGLE_BCOPY, calibrated.lookup(zcopy.start() - 1).protocol(),
                calibrated.format("calibrated"));
        assertSame(EagerProtocols.SINGLE_BCOPY, staticTable.lookup(zcopy.start()).protocol(), "static: still a copy");
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
