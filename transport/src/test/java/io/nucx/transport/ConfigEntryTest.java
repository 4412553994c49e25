package io.nucx.transport;

import io.nucx.transport.cma.CmaConfig;
import io.nucx.transport.config.ConfigEntry;
import io.nucx.transport.config.ConfigSchema;
import io.nucx.transport.config.ConfigTable;
import io.nucx.transport.shm.ShmConfig;
import io.nucx.transport.self.SelfConfig;
import io.nucx.transport.tcp.TcpConfig;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;

import static io.nucx.transport.testing.ConfigAssertions.assertMessageNames;
import static io.nucx.transport.testing.ConfigAssertions.assertRefused;
import static io.nucx.transport.testing.ConfigAssertions.config;
import static io.nucx.transport.testing.ConfigAssertions.env;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Typed settings: each layer's declarations, the typed getter (parsed once), "did you mean" for unknown names, a bad
 * value named with its variable, a name declared twice refused, the docs' value descriptions.
 */
class ConfigEntryTest {

    @Test
    void theTransportLayerAndEachTransportDeclareTheirOwnSettings() {
        ConfigSchema schema = ConfigSchema.all();
        assertEquals(List.of("Transports and launcher", "cma transport", "rdma transport", "self transport",
                "shm transport", "tcp transport"),
                schema.tables().stream().map(ConfigTable::title).toList(), "rank, then title");
        assertSame(TransportConfig.TLS, schema.entry("TLS"));
        assertSame(TransportConfig.TCP_IO, schema.entry("TCP_IO"));
        assertSame(ShmConfig.RING_SIZE, schema.entry("SHM_RING_SIZE"));
        assertSame(SelfConfig.QUEUE_BYTES, schema.entry("SELF_QUEUE_BYTES"));
        assertSame(CmaConfig.DATA, schema.entry("CMA_DATA"));
        for (ConfigEntry<?> e : schema.entries()) {
            assertTrue(e.doc().length() > 10 && !e.values().isEmpty(), e.envName());
            config(Map.of()).get(e); // every default parses
        }
    }

    @Test
    void theTypedGetterReturnsParsedValues() throws Exception {
        NucxConfig c = config(Map.of("TLS", " TCP, shm ", "TCP_IO", "NIO", "TCP_CONNECT", "p2p", "TCP_BIND_ADDR",
                "127.0.0.2, 127.0.0.3", "TCP_SEG_SIZE", "32k", "SHM_SPIN", "2ms", "SHM_RING_SIZE", "1m", "SELF_QUEUE_BYTES",
                "16k")).validate();
        assertEquals(List.of("tcp", "shm"), c.get(TransportConfig.TLS));
        assertEquals(Optional.of(IoEngine.NIO), c.get(TransportConfig.TCP_IO));
        assertEquals(TcpConfig.Connect.P2P, c.get(TcpConfig.CONNECT));
        assertEquals(List.of(InetAddress.getByName("127.0.0.2"), InetAddress.getByName("127.0.0.3")),
                c.get(TcpConfig.BIND_ADDR));
        assertEquals(32 << 10, c.get(TcpConfig.SEG_SIZE));
        assertEquals(2_000_000L, c.get(ShmConfig.SPIN));
        assertEquals(1L << 20, c.get(ShmConfig.RING_SIZE));
        assertEquals(16L << 10, c.get(SelfConfig.QUEUE_BYTES));
        NucxConfig defaults = config(Map.of());
        assertEquals(List.of("all"), defaults.get(TransportConfig.TLS));
        assertEquals(Optional.empty(), defaults.get(TransportConfig.TCP_IO), "auto");
        assertEquals(TcpConfig.Connect.IFACE, defaults.get(TcpConfig.CONNECT));
        assertEquals(c.memunits(NucxConfig.TCP_SEG_SIZE), c.get(TcpConfig.SEG_SIZE), "the previous accessor agrees");
    }

    /** A value is parsed once, whoever asks and however often; validate() is where they all are. */
    @Test
    void aValueIsParsedOnce() {
        AtomicInteger parses = new AtomicInteger();
        ConfigEntry<Integer> counted = ConfigEntry.of("TEST_COUNTED", "7", "counts its parses", "a number", text -> {
            parses.incrementAndGet();
            return Integer.parseInt(text);
        });
        ConfigSchema schema = ConfigSchema.of(List.of(table("test", counted)));
        NucxConfig c = NucxConfig.of(schema, Map.of("TEST_COUNTED", "9"), Map.of());
        assertEquals(9, c.get(counted));
        assertEquals(9, c.get(counted));
        c.validate();
        assertEquals(9, c.get(counted));
        assertEquals(1, parses.get());
    }

    @Test
    void anUnknownNameFailsNamingTheClosestKnownOne() {
        assertRefused(() -> env("NUCX_TCP_SEG_SIZ", "64k").validate(),
                "NUCX_TCP_SEG_SIZ", "did you mean NUCX_TCP_SEG_SIZE?");
        assertRefused(() -> config(Map.of("SHM_RING", "1m")),
                "'SHM_RING'", "did you mean SHM_RING_SIZE?");
        System.setProperty("nucx.self.queue.byte", "1m");
        try {
            assertRefused(() -> config(Map.of()).validate(),
                    "nucx.self.queue.byte", "did you mean nucx.self.queue.bytes?");
        } finally {
            System.clearProperty("nucx.self.queue.byte");
        }
    }

    @Test
    void aBadValueFailsNamingTheVariableTheValueAndWhatIsExpected() {
        assertRefused(() -> env("NUCX_TCP_BIND_ADDR", "300.1.1.1").get(TcpConfig.BIND_ADDR),
                "NUCX_TCP_BIND_ADDR", "'300.1.1.1'", "not an IP address");
        assertRefused(() -> env("NUCX_TCP_BIND_ADDR", "127.0.0.1,127.0.0.2,127.0.0.1").get(TcpConfig.BIND_ADDR),
                "NUCX_TCP_BIND_ADDR", "127.0.0.1 is listed twice");
        assertRefused(() -> config(Map.of("SHM_RING_SIZE", "96k")).get(ShmConfig.RING_SIZE),
                "SHM_RING_SIZE", "'96k'", "power of two");
        assertRefused(() -> config(Map.of("TLS", ",")).get(TransportConfig.TLS), "TLS", "empty transport list");
    }

    @Test
    void aNameDeclaredTwiceIsRefused() {
        ConfigEntry<String> a = ConfigEntry.string("TEST_TWICE", "", "first declaration");
        ConfigEntry<String> b = ConfigEntry.string("TEST_TWICE", "", "second declaration");
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> ConfigSchema.of(List.of(table("one", a), table("two", b))));
        assertMessageNames(e, "NUCX_TEST_TWICE", "one", "two");
    }

    @Test
    void theDocsDescribeWhatEachParserAccepts() {
        assertEquals("a size, 8k to 16m", TcpConfig.SEG_SIZE.values());
        assertEquals("auto | io_uring | epoll | nio", TransportConfig.TCP_IO.values());
        assertEquals("a size, 64k to 1g, a power of two", ShmConfig.RING_SIZE.values());
        assertEquals("auto | a duration (ns, us, ms, s), at most 10s", ShmConfig.SPIN.values());
        assertEquals("y | n", ConfigEntry.bool("TEST_B", "n", "").values());
    }

    private static ConfigTable table(String title, ConfigEntry<?>... entries) {
        return new ConfigTable() {
            @Override
            public String title() {
                return title;
            }

            @Override
            public List<ConfigEntry<?>> entries() {
                return List.of(entries);
            }
        };
    }
}
