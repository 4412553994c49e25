package io.nucx.wireup;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nucx.NucxEventLoopGroup;
import io.nucx.transport.NucxConfig;
import io.nucx.transport.NucxConfigException;
import io.nucx.transport.shm.ShmIoHandler;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.Map;

/**
 * A {@link NucxEventLoopGroup}'s loops idle as configured, as a worker's own loops do: NUCX_IDLE_SPINS and
 * NUCX_IDLE_BACKOFF reach the engine its factory makes (they were read, validated and then ignored before); unset,
 * a group's loops give their core away sooner than a worker's own loop, whose thread is its app's.
 */
class NucxEventLoopGroupConfigTest {

    @AfterEach
    void clear() {
        System.clearProperty(WireupConfig.IDLE_BACKOFF.propertyName());
        System.clearProperty(WireupConfig.IDLE_SPINS.propertyName());
    }

    @Test
    void theGroupsEngineBacksOffAsConfigured() {
        // Neither is the group's default (always, 100), so only the properties can give this engine.
        System.setProperty(WireupConfig.IDLE_BACKOFF.propertyName(), "jit");
        System.setProperty(WireupConfig.IDLE_SPINS.propertyName(), "77");

        String engine = NucxEventLoopGroup.newIoHandlerFactory().toString();

        assertTrue(engine.contains("back-off JIT after 77 idle passes"), engine);
    }

    @Test
    void byDefaultItsLoopsYieldSoonAndAlwaysAtOnceWithSocketsOnlyForTheAppsThreadsAndParkAfter300Us() {
        String engine = NucxEventLoopGroup.newIoHandlerFactory().toString();

        assertTrue(engine.contains("(spin 300000 ns, back-off ALWAYS after 10 idle passes, 0 with sockets only)"),
                engine);
    }

    @Test
    void aWorkersOwnLoopByDefaultYieldsOnlyWhileTheJitCompilerWorks() {
        NucxConfig unset = NucxConfig.of(Map.of(), Map.of());

        assertEquals(1000, WireupConfig.idleSpins(unset, false));
        assertEquals(ShmIoHandler.Backoff.JIT, WireupConfig.idleBackoff(unset, false));
        assertEquals(10, WireupConfig.idleSpins(unset, true));
        assertEquals(0, WireupConfig.socketIdleSpins(unset, true));
        assertEquals(1000, WireupConfig.socketIdleSpins(unset, false));
        assertEquals(ShmIoHandler.Backoff.ALWAYS, WireupConfig.idleBackoff(unset, true));
    }

    @Test
    void aValueSetIsTakenByBothKindsOfLoop() {
        NucxConfig set = NucxConfig.of(Map.of(), Map.of("NUCX_IDLE_SPINS", "5", "NUCX_IDLE_BACKOFF", "NEVER"));

        for (boolean groupLoop : new boolean[] {false, true}) { // 5: no kind's default, for rings or sockets
            assertEquals(5, WireupConfig.idleSpins(set, groupLoop));
            assertEquals(5, WireupConfig.socketIdleSpins(set, groupLoop));
            assertEquals(ShmIoHandler.Backoff.NEVER, WireupConfig.idleBackoff(set, groupLoop));
        }
    }

    @Test
    void aBadValueFailsNamingItsVariable() {
        NucxConfig spins = NucxConfig.of(Map.of(), Map.of("NUCX_IDLE_SPINS", "-3"));
        NucxConfig backoff = NucxConfig.of(Map.of(), Map.of("NUCX_IDLE_BACKOFF", "sometimes"));

        NucxConfigException e = assertThrows(NucxConfigException.class, () -> WireupConfig.idleSpins(spins, true));
        assertTrue(e.getMessage().contains("NUCX_IDLE_SPINS") && e.getMessage().contains("between 0 and"),
                e.getMessage());
        e = assertThrows(NucxConfigException.class, () -> WireupConfig.idleBackoff(backoff, false));
        assertTrue(e.getMessage().contains("NUCX_IDLE_BACKOFF") && e.getMessage().contains("auto | jit"),
                e.getMessage());
    }
}
