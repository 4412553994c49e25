package io.nucx.protocol.select;

import io.nucx.protocol.EagerSurcharge;
import io.nucx.protocol.EndpointConfig;
import io.nucx.protocol.RndvSurcharge;
import io.nucx.transport.Capability;
import io.nucx.transport.IfaceAttributes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.EnumSet;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The profile file: what it holds, how it is read back, what a bad one says, and how its figures reach the lanes. */
class PerfProfileTest {

    private static final IfaceAttributes TCP = new IfaceAttributes(EnumSet.of(Capability.AM_SHORT,
            Capability.AM_BCOPY, Capability.AM_ZCOPY), 8192, 65536, 256, 5.2e-6, 0, 0, 1.2e9, 50e-6, 0, 0, 1024);
    private static final IfaceAttributes CMA = new IfaceAttributes(EnumSet.of(Capability.GET_ZCOPY), 0, 0, 0, 80e-9,
            0, 11145e6, 0, 2e-6, 0, Long.MAX_VALUE, Integer.MAX_VALUE, 512 * 1024);

    private static PerfProfile sample() {
        return PerfProfile.builder("sample")
                .copyBandwidth(6.123456789e9)
                .figure("tcp/lo", PerfProfile.Figure.LATENCY, 4.1e-6)
                .figure("tcp/lo", PerfProfile.Figure.OVERHEAD, 1.9e-6)
                .figure("tcp/lo", PerfProfile.Figure.BANDWIDTH, 2.3e9)
                .figure("shm", PerfProfile.Figure.OVERHEAD, 0.45e-6)
                .figure("cma/memory", PerfProfile.Figure.REG_COST, 1.25e-6)
                .figure("cma/memory", PerfProfile.Figure.REG_GROWTH, 0.0)
                .figure("cma/memory", PerfProfile.Figure.BULK_FROM, 786432)
                .figure("cma/memory", PerfProfile.Figure.BULK_BANDWIDTH, 9.25e9)
                .figure("tcp/lo", PerfProfile.Figure.RNDV_COST, -2.5e-6)
                .figure("tcp/lo", PerfProfile.Figure.RNDV_GROWTH, 1.125e-11)
                .figure("tcp/lo", PerfProfile.Figure.EAGER_COST, 0.75e-6)
                .figure("tcp/lo", PerfProfile.Figure.EAGER_FROM, 8191)
                .build();
    }

    @Test
    void aWrittenProfileReadsBackWithEveryFigureExact(@org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
        PerfProfile p = sample();
        Path file = dir.resolve("profile.txt");
        p.write(file, List.of("measured by a test", "load average 0.42"));
        String text = Files.readString(file);
        assertTrue(text.startsWith("format = " + PerfProfile.FORMAT + "\n# measured by a test\n"), text);
        PerfProfile back = PerfProfile.read(file);
        assertEquals(file.toString(), back.source());
        assertEquals(p.format(List.of()), back.format(List.of()), "same figures, same order");
        assertEquals(List.of("cma/memory", "shm", "tcp/lo"), back.lanes());
        assertEquals(6.123456789e9, back.copyBandwidth(7e9));
        for (PerfProfile.Figure f : PerfProfile.Figure.values()) {
            for (String lane : List.of("tcp/lo", "shm/memory", "cma/memory", "self/memory")) {
                assertEquals(p.figure(lane, f), back.figure(lane, f), lane + " " + f);
            }
        }
    }

    @Test
    void aLaneTakesItsOwnFigureThenItsTransportsThenTheStaticOne() {
        PerfProfile p = PerfProfile.builder("t")
                .figure("tcp", PerfProfile.Figure.LATENCY, 9e-6)
                .figure("tcp", PerfProfile.Figure.OVERHEAD, 3e-6)
                .figure("tcp/lo", PerfProfile.Figure.LATENCY, 4e-6)
                .build();
        IfaceAttributes lo = p.apply("tcp/lo", TCP);
        assertEquals(4e-6, lo.latencySeconds(), "the lane's own");
        assertEquals(3e-6, lo.overheadSeconds(), "the transport's");
        assertEquals(TCP.bandwidth(), lo.bandwidth(), "static");
        assertEquals(TCP.maxBcopy(), lo.maxBcopy(), "limits are not figures");
        assertEquals(TCP.amCopyMax(), lo.amCopyMax());
        IfaceAttributes eth = p.apply("tcp/eth0", TCP);
        assertEquals(9e-6, eth.latencySeconds());
        assertSame(CMA, p.apply("cma/memory", CMA), "nothing for cma: the same attributes");
        assertEquals(7e9, p.copyBandwidth(7e9), "no copy figure: the fallback");
        assertSame(CMA, PerfProfile.NONE.apply("cma/memory", CMA));
    }

    /**
     * A shm lane's own copy rate (measured at start) goes only with a profile that fitted shm's bandwidth against a
     * memcpy figure (what calibration does); a profile with a memcpy figure and no shm bandwidth (calibrated over tcp
     * alone) leaves it, as does one without a memcpy figure.
     */
    @Test
    void aProfileThatFittedShmsBandwidthReplacesItsOwnCopyRate() {
        IfaceAttributes shm = new IfaceAttributes(EnumSet.of(Capability.AM_SHORT, Capability.AM_BCOPY), 65536, 65536,
                256, 80e-9, 0, 12179e6, 0, 10e-9, 0).withCopyBandwidth(60e9);
        PerfProfile overheadOnly = PerfProfile.builder("t").figure("shm", PerfProfile.Figure.OVERHEAD, 40e-9).build();
        IfaceAttributes kept = overheadOnly.apply("shm/memory", shm);
        assertEquals(60e9, kept.copyBandwidth(), "no memcpy figure: the lane's rate stands");
        assertEquals(40e-9, kept.overheadSeconds());
        IfaceAttributes tcpOnly = sample().apply("shm/memory", shm);
        assertEquals(60e9, tcpOnly.copyBandwidth(), "a memcpy figure but no shm bandwidth: the lane's rate stands");
        assertEquals(0.45e-6, tcpOnly.overheadSeconds());
        PerfProfile calibrated = PerfProfile.builder("c").copyBandwidth(9.5e10)
                .figure("shm/memory", PerfProfile.Figure.BANDWIDTH, 7.4e10).build();
        IfaceAttributes fitted = calibrated.apply("shm/memory", shm);
        assertFalse(fitted.copiesAreTheTransfer(), "the profile's memcpy figure and fitted bandwidth instead");
        assertEquals(7.4e10, fitted.bandwidth());
    }

    @Test
    void anEndpointConfigurationGetsTheFiguresOnEveryLane() {
        EndpointConfig c = new EndpointConfig("tcp/lo", TCP, "cma/memory", CMA,
                List.of(new EndpointConfig.BwLane("tcp/eth0", TCP)),
                List.of(new EndpointConfig.BwLane("cma/memory", CMA)));
        EndpointConfig applied = sample().apply(c);
        assertEquals(1.9e-6, applied.amLaneAttrs().overheadSeconds());
        assertEquals(2.3e9, applied.amLaneAttrs().bandwidth());
        assertEquals(1.25e-6, applied.rmaLaneAttrs().regCostSeconds());
        assertEquals(786432, applied.rmaLaneAttrs().bulkFrom(), "the bulk rate, from its size on");
        assertEquals(9.25e9, applied.rmaLaneAttrs().bulkBandwidth());
        assertEquals(CMA.bandwidth(), applied.rmaLaneAttrs().bandwidth(), "below it the static rate");
        assertFalse(applied.amLaneAttrs().hasBulkRate(), "tcp/lo has no bulk figures");
        assertEquals(new RndvSurcharge(-2.5e-6, 1.125e-11), applied.rndvSurcharge(), "the AM lane's surcharge");
        assertEquals(0, applied.rndvSurcharge().at(200_000), "below 0 up to where its line crosses it");
        assertEquals(-2.5e-6 + 1.125e-11 * (4 << 20), applied.rndvSurcharge().at(4 << 20), 1e-15);
        assertEquals(new EagerSurcharge(8191, 0.75e-6), applied.eagerSurcharge(),
                "the AM lane's eager surcharge");
        assertSame(EagerSurcharge.NONE, c.eagerSurcharge());
        assertSame(RndvSurcharge.NONE, c.rndvSurcharge());
        assertSame(RndvSurcharge.NONE, applied.readSurcharge(), "cma/memory has no read surcharge in the sample");
        EndpointConfig read = PerfProfile.builder("r").figure("cma/memory", PerfProfile.Figure.RNDV_COST, 1e-6)
                .figure("cma/memory", PerfProfile.Figure.RNDV_GROWTH, 2e-12).build().apply(c);
        assertEquals(new RndvSurcharge(1e-6, 2e-12), read.readSurcharge(), "the RMA lane's read surcharge");
        assertSame(RndvSurcharge.NONE, read.rndvSurcharge(), "not the AM lane's");
        assertSame(RndvSurcharge.NONE, sample().apply(new EndpointConfig("shm/memory", TCP)).rndvSurcharge(),
                "none for a lane the profile has no surcharge for");
        assertEquals(TCP.overheadSeconds(), applied.bwLanes().get(0).attrs().overheadSeconds(), "tcp/eth0: static");
        assertEquals(1, applied.rmaBwLanes().size(), "the second RMA rail is kept (a profile once dropped it)");
        assertEquals(1.25e-6, applied.rmaBwLanes().get(0).attrs().regCostSeconds(), "and gets its figures");
        assertEquals(c.amLane(), applied.amLane());
        assertEquals(c.rmaLane(), applied.rmaLane());
        assertSame(c, PerfProfile.NONE.apply(c));
    }

    @ParameterizedTest(name = "{1}")
    @CsvSource(delimiter = '|', value = {
            "''| empty; a profile starts with 'format = nucx-perf-profile 1'",
            "tcp/lo.latency = 1e-6| line 1: the first setting must be 'format = nucx-perf-profile 1', got 'tcp/lo.latency'",
            "format = nucx-perf-profile 2| line 1: format 'nucx-perf-profile 2' is not supported",
            "format = nucx-perf-profile 1\\ntcp/lo.latency 1e-6| line 2: expected 'key = value', got 'tcp/lo.latency 1e-6'",
            "format = nucx-perf-profile 1\\ntcp/lo.latency = fast| line 2: the value of 'tcp/lo.latency' is not a number: 'fast'",
            "format = nucx-perf-profile 1\\n# c\\ntcp/lo.speed = 1| line 3: unknown setting 'tcp/lo.speed'",
            "format = nucx-perf-profile 1\\ntcp/lo.bandwidth = 0| line 2: tcp/lo.bandwidth must be a finite number > 0, got 0.0",
            "format = nucx-perf-profile 1\\ntcp/lo.overhead = -1e-6| line 2: tcp/lo.overhead must be a finite number >= 0",
            "format = nucx-perf-profile 1\\ntcp/lo.latency = NaN| line 2: tcp/lo.latency must be a finite number >= 0",
            "format = nucx-perf-profile 1\\ncopy.bandwidth = Infinity| line 2: copy.bandwidth must be a finite number > 0",
            "format = nucx-perf-profile 1\\nTCP/lo.latency = 1e-6| line 2: 'TCP/lo' is not a lane name",
            "format = nucx-perf-profile 1\\nshm.latency = 1e-7\\nshm.latency = 2e-7| line 3: 'shm.latency' is given twice",
            "format = nucx-perf-profile 1\\ncma.bulk.from = 0.5| line 2: cma.bulk.from must be a finite number >= 1",
            "format = nucx-perf-profile 1\\ncma.bulk.bandwidth = 0| line 2: cma.bulk.bandwidth must be a finite number > 0",
            "format = nucx-perf-profile 1\\ncma.bulk.from = 1e6| cma.bulk.from and cma.bulk.bandwidth go together: give both",
            "format = nucx-perf-profile 1\\nshm.rndv.growth = 1e-12| shm.rndv.cost and shm.rndv.growth go together: give both",
            "format = nucx-perf-profile 1\\nshm.eager.cost = 1e-6| shm.eager.cost and shm.eager.from go together: give both",
            "format = nucx-perf-profile 1\\nshm.eager.cost = -1e-6\\nshm.eager.from = 4095| line 2: shm.eager.cost must be a finite number >= 0",
            "format = nucx-perf-profile 1\\nshm.rndv.cost = Infinity| line 2: shm.rndv.cost must be a finite number, got"})
    void aMalformedProfileIsRefusedNamingTheFileTheLineAndWhatIsWrong(String text, String message) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> PerfProfile.parse(text.replace("\\n", "\n"), "/etc/p.txt"));
        assertTrue(e.getMessage().startsWith("/etc/p.txt"), e.getMessage());
        assertTrue(e.getMessage().contains(message), () -> "'" + e.getMessage() + "' should say: " + message);
    }

    @Test
    void aMissingFileIsRefusedNamingIt(@org.junit.jupiter.api.io.TempDir Path dir) {
        Path missing = dir.resolve("nope.txt");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> PerfProfile.read(missing));
        assertTrue(e.getMessage().contains("cannot read performance profile " + missing), e.getMessage());
    }
}
