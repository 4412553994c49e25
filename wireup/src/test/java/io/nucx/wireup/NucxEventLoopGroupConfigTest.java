package io.nucx.wireup;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nucx.NucxEventLoopGroup;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A {@link NucxEventLoopGroup}'s loops idle as configured, as a worker's own loops do: NUCX_IDLE_SPINS and
 * NUCX_IDLE_BACKOFF reach the engine its factory makes (they were read, validated and then ignored before).
 */
class NucxEventLoopGroupConfigTest {

    @AfterEach
    void clear() {
        System.clearProperty(WireupConfig.IDLE_BACKOFF.propertyName());
        System.clearProperty(WireupConfig.IDLE_SPINS.propertyName());
    }

    @Test
    void theGroupsEngineBacksOffAsConfigured() {
        System.setProperty(WireupConfig.IDLE_BACKOFF.propertyName(), "always");
        System.setProperty(WireupConfig.IDLE_SPINS.propertyName(), "77");

        String engine = NucxEventLoopGroup.newIoHandlerFactory().toString();

        assertTrue(engine.contains("back-off ALWAYS after 77 idle passes"), engine);
    }

    @Test
    void byDefaultItYieldsWhileTheJitCompilerWorks() {
        String engine = NucxEventLoopGroup.newIoHandlerFactory().toString();

        assertTrue(engine.contains("back-off JIT after 1000 idle passes"), engine);
    }
}
