package io.nucx.examples;

import io.nucx.transport.config.ConfigEntry;
import io.nucx.transport.config.ConfigSchema;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** docs/CONFIG.md is what the declarations generate; when it is stale, this says how to regenerate it. */
class ConfigDocsTest {

    /** The committed file, from this module's directory (where the tests run). */
    private static final Path COMMITTED = Path.of("..", "docs", "CONFIG.md");

    @Test
    void theCommittedReferenceIsWhatTheDeclarationsGenerate() throws Exception {
        String generated = ConfigDocs.render(ConfigSchema.all());
        assertTrue(Files.exists(COMMITTED), "docs/CONFIG.md is missing; generate it with: " + ConfigDocs.COMMAND);
        String committed = Files.readString(COMMITTED, StandardCharsets.UTF_8);
        assertEquals(generated, committed, "docs/CONFIG.md is stale; regenerate it with: " + ConfigDocs.COMMAND);
    }

    @Test
    void everySettingOfEveryLayerIsListedOnce() {
        String generated = ConfigDocs.render(ConfigSchema.all());
        for (ConfigEntry<?> e : ConfigSchema.all().entries()) {
            int first = generated.indexOf("| `" + e.envName() + "` |");
            assertTrue(first > 0, e.envName() + " missing");
            assertEquals(-1, generated.indexOf("| `" + e.envName() + "` |", first + 1), e.envName() + " twice");
        }
        for (String name : new String[] {"NUCX_TLS", "NUCX_TCP_IO", "NUCX_SHM_SPIN", "NUCX_SELF_QUEUE_BYTES",
                "NUCX_RNDV_THRESH", "NUCX_KEEPALIVE_TIMEOUT"}) {
            assertTrue(generated.contains("`" + name + "`"), name);
        }
    }
}
