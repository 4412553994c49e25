package io.nucx.transport.cma;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Exit of a real child process seen by pidfd and by the kill(pid, 0) fallback. */
@Timeout(60)
class ProcessExitWatchTest {

    @Test
    void thisProcessIsAliveAndANumberNoProcessHasIsReportedGone() {
        try (ProcessExitWatch self = ProcessExitWatch.open(Cma.pid())) {
            assertNotNull(self);
            assertTrue(self.exact(), "pidfd_open works on this kernel: " + self);
            assertFalse(self.hasExited());
        }
        assertNull(ProcessExitWatch.open(Integer.MAX_VALUE), "beyond pid_max: no such process");
        assertNull(ProcessExitWatch.open(Integer.MAX_VALUE, false));
    }

    /**
     * The exit is seen once the child has exited: by pidfd already while it is a zombie (not yet reaped), by kill only
     * after the reaping; both stay exited.
     */
    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void aChildThatIsKilledIsSeenExited(boolean pidfd) throws Exception {
        Process child = new ProcessBuilder("sleep", "60").start();
        try (ProcessExitWatch w = ProcessExitWatch.open((int) child.pid(), pidfd)) {
            assertNotNull(w);
            assertEquals(pidfd, w.exact());
            assertEquals((int) child.pid(), w.pid());
            assertTrue(child.isAlive());
            assertFalse(w.hasExited(), "the child sleeps");
            child.destroyForcibly();
            assertTrue(child.waitFor(10, TimeUnit.SECONDS)); // exited and reaped: both ways see it at once now
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (!w.hasExited()) {
                assertTrue(System.nanoTime() < deadline, "exit not seen: " + w);
                Thread.onSpinWait();
            }
            assertTrue(w.hasExited(), "stays exited");
        } finally {
            child.destroyForcibly();
        }
    }
}
