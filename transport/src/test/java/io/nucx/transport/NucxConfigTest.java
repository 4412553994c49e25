package io.nucx.transport;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

import java.util.Map;
import java.util.stream.Stream;

import static io.nucx.transport.testing.ConfigAssertions.assertMessageNames;
import static io.nucx.transport.testing.ConfigAssertions.assertRefused;
import static io.nucx.transport.testing.ConfigAssertions.config;
import static io.nucx.transport.testing.ConfigAssertions.env;
import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The configuration's sources, precedence and errors, and the transport layer's settings through the previous,
 * untyped accessors (kept until every caller uses the typed getter). The protocols' and the worker's settings are
 * tested in their modules (ProtocolConfigTest, WireupConfigTest), where they are declared.
 */
class NucxConfigTest {

    @Test
    void parseMemunitsAcceptsNumbersWithBinaryUnits() {
        assertAll(
                () -> assertEquals(4096, NucxConfig.parseMemunits("4096")),
                () -> assertEquals(0, NucxConfig.parseMemunits("0")),
                () -> assertEquals(65536, NucxConfig.parseMemunits("64k")),
                () -> assertEquals(65536, NucxConfig.parseMemunits("64K")),
                () -> assertEquals(65536, NucxConfig.parseMemunits("64kb")),
                () -> assertEquals(8192, NucxConfig.parseMemunits(" 8k ")),
                () -> assertEquals(1048576, NucxConfig.parseMemunits("1m")),
                () -> assertEquals(2147483648L, NucxConfig.parseMemunits("2g")),
                () -> assertEquals(100, NucxConfig.parseMemunits("100b")));
    }

    @Test
    void parseMemunitsRejectsWhatIsNotASizeQuotingTheText() {
        assertAll(Stream.of("12q", "-1", "-1k", "", "k", "1.5m", "one", "99999999999g").map(text -> (Executable) () -> {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> NucxConfig.parseMemunits(text), text);
            assertMessageNames(e, "'" + text + "'");
        }));
    }

    @Test
    void badShmSettingsStopStartUpNamingTheVariable() {
        assertAll(
                () -> assertRefused(() -> env("NUCX_SHM_RING_SIZE", "3m").validate(), "NUCX_SHM_RING_SIZE",
                        "power of two"),
                () -> assertRefused(() -> env("NUCX_SHM_SPIN", "fast").validate(), "NUCX_SHM_SPIN", "'fast'"),
                () -> assertRefused(() -> env("NUCX_SHM_SEG_SIZE", "1m").validate(), "NUCX_SHM_SEG_SIZE",
                        "eighth of the ring"),
                () -> assertRefused(() -> env("NUCX_SHM_COPY_BW", "fast").validate(), "NUCX_SHM_COPY_BW", "'fast'"),
                () -> assertRefused(() -> env("NUCX_SHM_COPY_BW", "1k").validate(), "NUCX_SHM_COPY_BW",
                        "between " + (100L << 20)));
        NucxConfig c = config(Map.of("NUCX_SHM_SPIN", "2ms"));
        assertEquals(2_000_000, c.nanos(NucxConfig.SHM_SPIN, Long.MAX_VALUE));
        assertEquals(0, config(Map.of("NUCX_SHM_SPIN", "0")).nanos(NucxConfig.SHM_SPIN, 1));
    }

    @Test
    void defaultsValidate() {
        NucxConfig c = config(Map.of());
        assertSame(c, c.validate());
        assertEquals("all", c.string(NucxConfig.TLS));
        assertEquals(128 * 1024, c.memunits(NucxConfig.TCP_SEG_SIZE));
        assertEquals(1L << 20, c.memunits(NucxConfig.SELF_QUEUE_BYTES));
    }

    @Test
    void badChoiceNamesTheSettingAndTheValue() {
        NucxConfigException e = assertThrows(NucxConfigException.class,
                () -> config(Map.of("TCP_IO", "bogus")).validate());
        assertMessageNames(e, "TCP_IO", "bogus", "nio");
    }

    @Test
    void badValueFromTheEnvironmentNamesTheVariable() {
        NucxConfigException e = assertThrows(NucxConfigException.class,
                () -> env("NUCX_TCP_IO", "bogus").validate());
        assertMessageNames(e, "NUCX_TCP_IO", "bogus");
    }

    @Test
    void tcpConnectModeIsIfaceOrP2p() {
        assertEquals("iface", config(Map.of()).choice(NucxConfig.TCP_CONNECT, "iface", "p2p"));
        assertEquals("p2p", config(Map.of("TCP_CONNECT", "p2p")).validate().choice(NucxConfig.TCP_CONNECT, "iface",
                "p2p"));
        NucxConfigException e = assertThrows(NucxConfigException.class,
                () -> env("NUCX_TCP_CONNECT", "ep").validate());
        assertMessageNames(e, "NUCX_TCP_CONNECT", "ep", "p2p");
    }

    @Test
    void unknownOverrideKeyIsRejectedAtOnce() {
        NucxConfigException e = assertThrows(NucxConfigException.class, () -> config(Map.of("TCP_IOO", "nio")));
        assertMessageNames(e, "TCP_IOO", "TCP_IO");
    }

    @Test
    void overrideKeyMayCarryTheNucxPrefix() {
        assertEquals("tcp", config(Map.of("NUCX_TLS", "tcp")).string(NucxConfig.TLS));
    }

    @Test
    void unknownNucxEnvironmentVariableIsRejected() {
        NucxConfigException e = assertThrows(NucxConfigException.class,
                () -> env("NUCX_FOO", "1").validate());
        assertMessageNames(e, "NUCX_FOO");
    }

    @Test
    void unrelatedEnvironmentVariablesAreIgnored() {
        NucxConfig.of(Map.of(), Map.of("UCX_TLS", "rc", "NUCXFOO", "1", "PATH", "/bin")).validate();
    }

    @Test
    void overrideBeatsEnvironmentWhichBeatsDefault() {
        Map<String, String> env = Map.of("NUCX_SELF_QUEUE_BYTES", "16k", "NUCX_TLS", "self");
        NucxConfig c = NucxConfig.of(Map.of("TLS", "tcp"), env);
        assertEquals("tcp", c.string(NucxConfig.TLS));
        assertEquals(16 * 1024, c.memunits(NucxConfig.SELF_QUEUE_BYTES));
        assertEquals("auto", c.string(NucxConfig.TCP_IO));
        assertEquals("self", c.with("TLS", "self").string(NucxConfig.TLS));
        assertEquals("tcp", c.string(NucxConfig.TLS), "with() returns a copy");
    }

    @Test
    void systemPropertyBeatsEnvironment() {
        String property = NucxConfig.SELF_QUEUE_BYTES.propertyName();
        assertEquals("nucx.self.queue.bytes", property);
        System.setProperty(property, "32k");
        try {
            NucxConfig c = env("NUCX_SELF_QUEUE_BYTES", "16k");
            assertEquals(32 * 1024, c.memunits(NucxConfig.SELF_QUEUE_BYTES));
            assertEquals(8 * 1024, NucxConfig.of(Map.of("SELF_QUEUE_BYTES", "8k"), Map.of())
                    .memunits(NucxConfig.SELF_QUEUE_BYTES), "an explicit override beats the property");
        } finally {
            System.clearProperty(property);
        }
    }

    @Test
    void unknownNucxSystemPropertyIsRejected() {
        System.setProperty("nucx.no.such.setting", "1");
        try {
            NucxConfigException e = assertThrows(NucxConfigException.class, () -> config(Map.of()).validate());
            assertMessageNames(e, "nucx.no.such.setting");
        } finally {
            System.clearProperty("nucx.no.such.setting");
        }
    }

    @Test
    void tcpSegSizeOutsideItsBoundsIsRejected() {
        assertAll(Stream.of("4k", "8191", "17m").map(value -> (Executable) () -> {
            NucxConfigException e = assertThrows(NucxConfigException.class,
                    () -> config(Map.of("TCP_SEG_SIZE", value)).validate(), value);
            assertMessageNames(e, "TCP_SEG_SIZE", value, "8192");
        }));
    }

    @Test
    void tcpSegSizeAtItsBoundsIsAccepted() {
        for (String value : new String[] {"8k", "8192", "16m"}) {
            config(Map.of("TCP_SEG_SIZE", value)).validate();
        }
    }

    @Test
    void unparsableSizeNamesTheSetting() {
        NucxConfigException e = assertThrows(NucxConfigException.class,
                () -> config(Map.of("SELF_QUEUE_BYTES", "lots")).validate());
        assertMessageNames(e, "SELF_QUEUE_BYTES", "lots");
    }

    @Test
    void emptyTransportListIsRejected() {
        NucxConfigException e = assertThrows(NucxConfigException.class,
                () -> config(Map.of("TLS", "  ")).validate());
        assertMessageNames(e, "TLS");
    }
}
