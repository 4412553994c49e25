package io.nucx.wireup;

import io.nucx.ErrorMode;
import io.nucx.transport.NucxConfig;
import io.nucx.transport.NucxConfigException;
import io.nucx.transport.config.ConfigSchema;
import io.nucx.transport.config.ConfigTable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static io.nucx.transport.testing.ConfigAssertions.assertMessageNames;
import static io.nucx.transport.testing.ConfigAssertions.assertRefused;
import static io.nucx.transport.testing.ConfigAssertions.config;
import static io.nucx.transport.testing.ConfigAssertions.env;
import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The worker's settings: declared here, typed, validated at start-up (with the previous accessors too). */
class WireupConfigTest {

    @Test
    void everyLayersTableIsFoundInOrder() {
        assertEquals(List.of("Transports and launcher", "cma transport", "rdma transport", "self transport",
                "shm transport", "tcp transport", "Protocols", "Worker, endpoints and wireup"),
                ConfigSchema.all().tables().stream().map(ConfigTable::title).toList());
    }

    @Test
    void typedValuesAndDefaults() {
        NucxConfig c = config(Map.of()).validate();
        assertEquals(false, c.get(WireupConfig.BUSY_POLL));
        assertEquals(ErrorMode.PEER, c.get(WireupConfig.ERR_MODE));
        assertEquals(2, c.get(WireupConfig.MAX_RNDV_LANES));
        assertEquals(4.0, c.get(WireupConfig.MULTI_LANE_MAX_RATIO));
        assertEquals(1_000_000_000L, c.get(WireupConfig.KEEPALIVE_INTERVAL));
        assertEquals(5_000_000_000L, c.get(WireupConfig.KEEPALIVE_TIMEOUT));
        NucxConfig set = config(Map.of("ERR_MODE", "FAILOVER", "KEEPALIVE_INTERVAL", "inf", "BUSY_POLL", "on"))
                .validate();
        assertEquals(ErrorMode.FAILOVER, set.get(WireupConfig.ERR_MODE));
        assertEquals(Long.MAX_VALUE, set.get(WireupConfig.KEEPALIVE_INTERVAL), "no keepalive");
        assertEquals(true, set.get(WireupConfig.BUSY_POLL));
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
                () -> assertRefused(() -> env("NUCX_KEEPALIVE_INTERVAL", "often").validate(),
                        "NUCX_KEEPALIVE_INTERVAL", "'often'"),
                () -> assertRefused(() -> env("NUCX_KEEPALIVE_INTERVAL", "1ms").validate(),
                        "NUCX_KEEPALIVE_INTERVAL", "at least 10ms"),
                () -> assertRefused(() -> env("NUCX_KEEPALIVE_INTERVAL", "2h").validate(),
                        "NUCX_KEEPALIVE_INTERVAL", "'2h'"),
                () -> assertRefused(() -> env("NUCX_KEEPALIVE_TIMEOUT", "1500ms").validate(),
                        "NUCX_KEEPALIVE_TIMEOUT", "'1500ms'", "twice NUCX_KEEPALIVE_INTERVAL=1s"),
                () -> assertRefused(() -> env("NUCX_KEEPALIVE_TIMEOUT", "1500ms").keepaliveTimeoutNanos(),
                        "NUCX_KEEPALIVE_TIMEOUT", "twice NUCX_KEEPALIVE_INTERVAL=1s"),
                () -> assertRefused(() -> env("NUCX_ERR_MODE", "sometimes").validate(),
                        "NUCX_ERR_MODE", "'sometimes'", "peer | failover | none"));
    }

    @Test
    void laneLimitsAreCheckedAndNamed() {
        NucxConfig ok = NucxConfig.of(Map.of(), Map.of("NUCX_ERR_MODE", "failover", "NUCX_MAX_RNDV_LANES", "3",
                "NUCX_MULTI_LANE_MAX_RATIO", "12.5")).validate();
        assertEquals(3, ok.integer(NucxConfig.MAX_RNDV_LANES, 1, 8));
        assertEquals(12.5, ok.decimal(NucxConfig.MULTI_LANE_MAX_RATIO, 1, 1000));
        assertEquals(3, ok.get(WireupConfig.MAX_RNDV_LANES));
        assertAll(
                () -> assertRefused(() -> env("NUCX_MAX_RNDV_LANES", "0").validate(),
                        "NUCX_MAX_RNDV_LANES", "'0'", "between 1 and 8"),
                () -> assertRefused(() -> env("NUCX_MAX_RNDV_LANES", "two").validate(),
                        "NUCX_MAX_RNDV_LANES", "'two'", "not a whole number"),
                () -> assertRefused(() -> env("NUCX_MULTI_LANE_MAX_RATIO", "0.5").validate(),
                        "NUCX_MULTI_LANE_MAX_RATIO", "'0.5'", "between 1.0 and 1000.0"),
                () -> assertRefused(() -> env("NUCX_MULTI_LANE_MAX_RATIO", "NaN").validate(),
                        "NUCX_MULTI_LANE_MAX_RATIO", "'NaN'"));
    }
}
