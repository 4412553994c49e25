package io.nucx.it;

import io.nucx.transport.IoEngine;
import org.junit.jupiter.api.Assumptions;

import java.util.Arrays;
import java.util.stream.Stream;

/** The TCP engines every tcp test runs on. An engine that cannot load here is skipped with its reason. */
final class Engines {
    private Engines() {
    }

    static Stream<String> all() {
        return Arrays.stream(IoEngine.values()).map(IoEngine::configName);
    }

    static void assumeAvailable(String engine) {
        IoEngine mode = Arrays.stream(IoEngine.values()).filter(m -> m.configName().equals(engine)).findFirst()
                .orElseThrow();
        Assumptions.assumeTrue(mode.availability().isAvailable(),
                () -> engine + " unavailable here: " + mode.availability().reason());
    }
}
