package io.nucx.transport;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

import java.util.Map;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class NucxConfigTest {

    private static final Map<String, String> NO_ENV = Map.of();

    private static NucxConfig config(Map<String, String> overrides) {
        return NucxConfig.of(overrides, NO_ENV);
    }

    private static void assertMessageNames(Exception e, String... words) {
        for (String w : words) {
            assertTrue(e.getMessage().contains(w), () -> "'" + e.getMessage() + "' should name " + w);
        }
    }

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
    void aBadRendezvousSchemeStopsStartUpNamingTheVariableAndTheChoices() {
        NucxConfigException e = assertThrows(NucxConfigException.class,
                () -> NucxConfig.of(Map.of(), Map.of("NUCX_RNDV_SCHEME", "put")).validate());
        assertMessageNames(e, "NUCX_RNDV_SCHEME", "'put'", "auto | get_zcopy | put_zcopy | am");
        assertEquals("auto", config(Map.of()).choice(NucxConfig.RNDV_SCHEME, "auto", "get_zcopy", "put_zcopy", "am"));
        assertEquals("put_zcopy", NucxConfig.of(Map.of(), Map.of("NUCX_RNDV_SCHEME", "PUT_ZCOPY")).validate()
                .choice(NucxConfig.RNDV_SCHEME, "auto", "get_zcopy", "put_zcopy", "am"));
    }

    @Test
    void badShmSettingsStopStartUpNamingTheVariable() {
        assertAll(
                () -> assertMessageNames(assertThrows(NucxConfigException.class,
                        () -> NucxConfig.of(Map.of(), Map.of("NUCX_SHM_RING_SIZE", "3m")).validate()), "NUCX_SHM_RING_SIZE",
                        "power of two"),
                () -> assertMessageNames(assertThrows(NucxConfigException.class,
                        () -> NucxConfig.of(Map.of(), Map.of("NUCX_SHM_SPIN", "fast")).validate()), "NUCX_SHM_SPIN", "'fast'"),
                () -> assertMessageNames(assertThrows(NucxConfigException.class,
                        () -> NucxConfig.of(Map.of(), Map.of("NUCX_SHM_SEG_SIZE", "1m")).validate()), "NUCX_SHM_SEG_SIZE",
                        "eighth of the ring"));
        NucxConfig c = config(Map.of("NUCX_SHM_SPIN", "2ms"));
        assertEquals(2_000_000, c.nanos(NucxConfig.SHM_SPIN, Long.MAX_VALUE));
        assertEquals(0, config(Map.of("NUCX_SHM_SPIN", "0")).nanos(NucxConfig.SHM_SPIN, 1));
    }

    @Test
    void defaultsValidate() {
        NucxConfig c = config(Map.of());
        assertSame(c, c.validate());
        assertEquals("all", c.string(NucxConfig.TLS));
        assertEquals(64 * 1024, c.memunits(NucxConfig.TCP_SEG_SIZE));
        assertEquals(1L << 20, c.memunits(NucxConfig.SELF_QUEUE_BYTES));
        assertFalse(c.bool(NucxConfig.BUSY_POLL));
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
                () -> NucxConfig.of(Map.of(), Map.of("NUCX_TCP_IO", "bogus")).validate());
        assertMessageNames(e, "NUCX_TCP_IO", "bogus");
    }

    @Test
    void tcpConnectModeIsIfaceOrP2p() {
        assertEquals("iface", config(Map.of()).choice(NucxConfig.TCP_CONNECT, "iface", "p2p"));
        assertEquals("p2p", config(Map.of("TCP_CONNECT", "p2p")).validate().choice(NucxConfig.TCP_CONNECT, "iface",
                "p2p"));
        NucxConfigException e = assertThrows(NucxConfigException.class,
                () -> NucxConfig.of(Map.of(), Map.of("NUCX_TCP_CONNECT", "ep")).validate());
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
                () -> NucxConfig.of(Map.of(), Map.of("NUCX_FOO", "1")).validate());
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
            NucxConfig c = NucxConfig.of(Map.of(), Map.of("NUCX_SELF_QUEUE_BYTES", "16k"));
            assertEquals(32 * 1024, c.memunits(NucxConfig.SELF_QUEUE_BYTES));
            assertEquals(8 * 1024, NucxConfig.of(Map.of("SELF_QUEUE_BYTES", "8k"), NO_ENV)
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
    void busyPollAcceptsTheUsualYesAndNoSpellings() {
        assertAll(Stream.of("y", "YES", "on", "1", "true").map(v -> (Executable) () ->
                assertTrue(config(Map.of("BUSY_POLL", v)).validate().bool(NucxConfig.BUSY_POLL), v)));
        assertAll(Stream.of("n", "no", "off", "0", "False").map(v -> (Executable) () ->
                assertFalse(config(Map.of("BUSY_POLL", v)).validate().bool(NucxConfig.BUSY_POLL), v)));
    }

    @Test
    void busyPollRejectsOtherWords() {
        NucxConfigException e = assertThrows(NucxConfigException.class,
                () -> config(Map.of("BUSY_POLL", "maybe")).validate());
        assertMessageNames(e, "BUSY_POLL", "maybe");
    }

    @Test
    void emptyTransportListIsRejected() {
        NucxConfigException e = assertThrows(NucxConfigException.class,
                () -> config(Map.of("TLS", "  ")).validate());
        assertMessageNames(e, "TLS");
    }

    @Test
    void zeroMaxMessageSizeIsRejected() {
        assertThrows(NucxConfigException.class, () -> config(Map.of("MAX_MSG_SIZE", "0")).validate());
    }

    @Test
    void zcopyThresholdIsAutoASizeOrInfAndABadOneStopsStartUpNamingTheSetting() {
        assertEquals(-1, config(Map.of()).validate().threshold(NucxConfig.ZCOPY_THRESH), "auto by default");
        assertEquals(64 << 10, config(Map.of("ZCOPY_THRESH", "64k")).validate().threshold(NucxConfig.ZCOPY_THRESH));
        assertEquals(0, config(Map.of("ZCOPY_THRESH", "0")).validate().threshold(NucxConfig.ZCOPY_THRESH));
        assertEquals(Long.MAX_VALUE, config(Map.of("ZCOPY_THRESH", "INF")).validate()
                .threshold(NucxConfig.ZCOPY_THRESH), "never");
        assertAll(Stream.of("soon", "-1", "1x").map(v -> (Executable) () -> assertMessageNames(assertThrows(
                NucxConfigException.class, () -> NucxConfig.of(Map.of(), Map.of("NUCX_ZCOPY_THRESH", v)).validate()),
                "NUCX_ZCOPY_THRESH", "'" + v + "'", "auto, inf or a size")));
    }

    @Test
    void keepaliveDefaultsAreOneSecondAndFiveSeconds() {
        NucxConfig c = config(Map.of());
        assertEquals(1_000_000_000L, c.keepaliveIntervalNanos());
        assertEquals(5_000_000_000L, c.keepaliveTimeoutNanos());
        assertEquals("peer", c.choice(NucxConfig.ERR_MODE, "peer", "none"));
        assertEquals(Long.MAX_VALUE, config(Map.of("KEEPALIVE_INTERVAL", "inf")).validate().keepaliveIntervalNanos());
        assertEquals(250_000_000L, config(Map.of("KEEPALIVE_INTERVAL", "250ms", "KEEPALIVE_TIMEOUT", "500ms"))
                .validate().keepaliveIntervalNanos());
    }

    @Test
    void badKeepaliveSettingsStopStartUpNamingTheVariable() {
        assertAll(
                () -> assertMessageNames(assertThrows(NucxConfigException.class,
                        () -> NucxConfig.of(Map.of(), Map.of("NUCX_KEEPALIVE_INTERVAL", "often")).validate()),
                        "NUCX_KEEPALIVE_INTERVAL", "'often'"),
                () -> assertMessageNames(assertThrows(NucxConfigException.class,
                        () -> NucxConfig.of(Map.of(), Map.of("NUCX_KEEPALIVE_INTERVAL", "1ms")).validate()),
                        "NUCX_KEEPALIVE_INTERVAL", "at least 10ms"),
                () -> assertMessageNames(assertThrows(NucxConfigException.class,
                        () -> NucxConfig.of(Map.of(), Map.of("NUCX_KEEPALIVE_INTERVAL", "2h")).validate()),
                        "NUCX_KEEPALIVE_INTERVAL", "'2h'"),
                () -> assertMessageNames(assertThrows(NucxConfigException.class,
                        () -> NucxConfig.of(Map.of(), Map.of("NUCX_KEEPALIVE_TIMEOUT", "1500ms")).validate()),
                        "NUCX_KEEPALIVE_TIMEOUT", "'1500ms'", "twice NUCX_KEEPALIVE_INTERVAL=1s"),
                () -> assertMessageNames(assertThrows(NucxConfigException.class,
                        () -> NucxConfig.of(Map.of(), Map.of("NUCX_ERR_MODE", "sometimes")).validate()),
                        "NUCX_ERR_MODE", "'sometimes'", "peer | failover | none"));
    }

    @Test
    void laneLimitsAreCheckedAndNamed() {
        NucxConfig ok = NucxConfig.of(Map.of(), Map.of("NUCX_ERR_MODE", "failover", "NUCX_MAX_RNDV_LANES", "3",
                "NUCX_MULTI_LANE_MAX_RATIO", "12.5")).validate();
        assertEquals(3, ok.integer(NucxConfig.MAX_RNDV_LANES, 1, 8));
        assertEquals(12.5, ok.decimal(NucxConfig.MULTI_LANE_MAX_RATIO, 1, 1000));
        assertAll(
                () -> assertMessageNames(assertThrows(NucxConfigException.class,
                        () -> NucxConfig.of(Map.of(), Map.of("NUCX_MAX_RNDV_LANES", "0")).validate()),
                        "NUCX_MAX_RNDV_LANES", "'0'", "between 1 and 8"),
                () -> assertMessageNames(assertThrows(NucxConfigException.class,
                        () -> NucxConfig.of(Map.of(), Map.of("NUCX_MAX_RNDV_LANES", "two")).validate()),
                        "NUCX_MAX_RNDV_LANES", "'two'", "not a whole number"),
                () -> assertMessageNames(assertThrows(NucxConfigException.class,
                        () -> NucxConfig.of(Map.of(), Map.of("NUCX_MULTI_LANE_MAX_RATIO", "0.5")).validate()),
                        "NUCX_MULTI_LANE_MAX_RATIO", "'0.5'", "between 1.0 and 1000.0"),
                () -> assertMessageNames(assertThrows(NucxConfigException.class,
                        () -> NucxConfig.of(Map.of(), Map.of("NUCX_MULTI_LANE_MAX_RATIO", "NaN")).validate()),
                        "NUCX_MULTI_LANE_MAX_RATIO", "'NaN'"));
    }
}
