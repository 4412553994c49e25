package io.nucx;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nucx.transport.NucxConfig;
import org.junit.jupiter.api.Test;

import java.util.Map;

/**
 * The loop a {@link NucxBootstrap} makes for itself idles as a worker's own loop (its thread is its app's: perftest,
 * the demo), not as a {@link NucxEventLoopGroup}'s, whose cores an app's threads share and which spins longer,
 * yielding, before it parks.
 */
class OwnLoopIdleTest {

    @Test
    void aBootstrapsOwnLoopSpinsAHundredMicrosecondsAndYieldsOnlyWhileTheJitCompilerWorks() {
        NucxConfig unset = NucxConfig.of(Map.of(), Map.of());

        String own = NucxBootstrap.ownLoopIoHandlerFactory(unset, false).toString();
        String group = NucxEventLoopGroup.newIoHandlerFactory(unset, false, true).toString();

        assertTrue(own.contains("(spin 100000 ns, back-off JIT after 1000 idle passes)"), own);
        assertTrue(group.contains("(spin 300000 ns, back-off ALWAYS after 10 idle passes, 0 with sockets only)"),
                group);
    }

    @Test
    void aValueSetReachesABootstrapsOwnLoop() {
        NucxConfig set = NucxConfig.of(Map.of(), Map.of("NUCX_IDLE_SPINS", "5", "NUCX_IDLE_BACKOFF", "never",
                "NUCX_SHM_SPIN", "7us"));

        String own = NucxBootstrap.ownLoopIoHandlerFactory(set, false).toString();
        String busy = NucxBootstrap.ownLoopIoHandlerFactory(set, true).toString();

        assertTrue(own.contains("(spin 7000 ns, back-off NEVER after 5 idle passes)"), own);
        assertTrue(busy.contains("(busy-poll, back-off NEVER after 5 idle passes)"), busy);
    }
}
