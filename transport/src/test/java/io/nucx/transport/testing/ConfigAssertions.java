package io.nucx.transport.testing;

import io.nucx.transport.NucxConfig;
import io.nucx.transport.NucxConfigException;
import org.junit.jupiter.api.function.Executable;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What every layer's configuration tests share: configurations without the process's environment, refusals. */
public final class ConfigAssertions {

    private ConfigAssertions() {
    }

    /** A configuration with these overrides and an empty environment. */
    public static NucxConfig config(Map<String, String> overrides) {
        return NucxConfig.of(overrides, Map.of());
    }

    /** A configuration whose environment has one variable. */
    public static NucxConfig env(String name, String value) {
        return NucxConfig.of(Map.of(), Map.of(name, value));
    }

    /** Asserts that {@code e}'s message contains each of {@code words}. */
    public static void assertMessageNames(Exception e, String... words) {
        for (String w : words) {
            assertTrue(e.getMessage().contains(w), () -> "'" + e.getMessage() + "' should name " + w);
        }
    }

    /** Asserts that {@code action} is refused with a configuration error naming each of {@code words}. */
    public static void assertRefused(Executable action, String... words) {
        assertMessageNames(assertThrows(NucxConfigException.class, action), words);
    }
}
