package io.nucx;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nucx.transport.NucxConfig;
import org.junit.jupiter.api.Test;

import java.util.Map;

/**
 * The loop a {@link NucxBootstrap} makes for itself idles as a worker's own loop (its thread is its app's: perftest,
 * the demo), not as a {@link NucxEventLoopGroup}'s, whose cores an app's threads share.
 */
class OwnLoopIdleTest {

    @Test
    void aBootstrapsOwnLoopYieldsOnlyWhileTheJitCompilerWorksAfterAThousandIdlePasses() {
        NucxConfig unset = NucxConfig.of(Map.of(), Map.of());

        String own = NucxBootstrap.ownLoopIoHandlerFactory(unset, false).toString();
        String group = NucxEventLoopGroup.newIoHandlerFactory(unset, false, true).toString();

        assertTrue(own.contains("back-off JIT after 1000 idle passes"), own);
        assertTrue(group.contains("back-off ALWAYS after 100 idle passes"), group);
    }

    @Test
    void aValueSetReachesABootstrapsOwnLoop() {
        NucxConfig set = NucxConfig.of(Map.of(), Map.of("NUCX_IDLE_SPINS", "5", "NUCX_IDLE_BACKOFF", "never"));

        String own = NucxBootstrap.ownLoopIoHandlerFactory(set, true).toString();

        assertTrue(own.contains("back-off NEVER after 5 idle passes"), own);
    }
}
