package io.nucx.protocol;

import io.nucx.protocol.tag.RndvScheme;
import io.nucx.transport.NucxConfig;
import io.nucx.transport.NucxConfigException;
import io.nucx.transport.config.ConfigSchema;
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
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The protocol layer's settings: declared here, typed, validated at start-up (with the previous accessors too). */
class ProtocolConfigTest {

    @Test
    void theProtocolLayersSettingsAreDeclaredHereAndFoundWithTheOthers() {
        ConfigSchema schema = ConfigSchema.all();
        for (var e : new ProtocolConfig().entries()) {
            assertSame(e, schema.entry(e.name()), e.envName());
        }
        assertEquals("Protocols", schema.tables().get(schema.tables().size() - 1).title(),
                "after the transports (the worker's table is not on this module's class path)");
    }

    @Test
    void typedValuesAndDefaults() {
        NucxConfig defaults = config(Map.of()).validate();
        assertEquals(1L << 30, defaults.get(ProtocolConfig.MAX_MSG_SIZE));
        assertEquals(-1L, defaults.get(ProtocolConfig.RNDV_THRESH), "auto");
        assertEquals(-1L, defaults.get(ProtocolConfig.BCOPY_THRESH), "auto");
        assertEquals(-1L, defaults.get(ProtocolConfig.ZCOPY_THRESH), "auto");
        assertEquals(RndvScheme.AUTO, defaults.get(ProtocolConfig.RNDV_SCHEME));
        assertEquals(false, defaults.get(ProtocolConfig.PROTO_INFO));
        assertEquals("all", defaults.get(ProtocolConfig.PROTOS));
        NucxConfig set = config(Map.of("RNDV_THRESH", "64k", "RNDV_SCHEME", "PUT_ZCOPY", "PROTO_INFO", "y",
                "PROTOS", "egr/*")).validate();
        assertEquals(64L << 10, set.get(ProtocolConfig.RNDV_THRESH));
        assertEquals(RndvScheme.PUT_ZCOPY, set.get(ProtocolConfig.RNDV_SCHEME));
        assertEquals(true, set.get(ProtocolConfig.PROTO_INFO));
        assertEquals("egr/*", set.get(ProtocolConfig.PROTOS));
    }

    @Test
    void aMisspelledThresholdFailsNamingTheRightOne() {
        assertRefused(() -> env("NUCX_RNDV_TRESH", "8k").validate(),
                "NUCX_RNDV_TRESH", "did you mean NUCX_RNDV_THRESH?");
    }

    @Test
    void aBadRendezvousSchemeStopsStartUpNamingTheVariableAndTheChoices() {
        NucxConfigException e = assertThrows(NucxConfigException.class,
                () -> env("NUCX_RNDV_SCHEME", "put").validate());
        assertMessageNames(e, "NUCX_RNDV_SCHEME", "'put'", "auto | get_zcopy | put_zcopy | am");
        assertEquals("auto", config(Map.of()).choice(NucxConfig.RNDV_SCHEME, "auto", "get_zcopy", "put_zcopy", "am"));
        assertEquals("put_zcopy", env("NUCX_RNDV_SCHEME", "PUT_ZCOPY").validate()
                .choice(NucxConfig.RNDV_SCHEME, "auto", "get_zcopy", "put_zcopy", "am"));
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
        assertEquals(Long.MAX_VALUE, config(Map.of("ZCOPY_THRESH", "inf")).get(ProtocolConfig.ZCOPY_THRESH));
        assertAll(Stream.of("soon", "-1", "1x").map(v -> (Executable) () -> assertMessageNames(assertThrows(
                NucxConfigException.class, () -> env("NUCX_ZCOPY_THRESH", v).validate()),
                "NUCX_ZCOPY_THRESH", "'" + v + "'", "auto, inf or a size")));
    }
}
