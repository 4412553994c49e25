package io.nucx.it;

import io.nucx.Worker;
import io.nucx.transport.testing.LeakRecorder;

import java.util.concurrent.TimeUnit;

/** How every peer process ends: close its worker, then exit 0, or 3 when Netty reported a leak. */
final class PeerExit {

    private PeerExit() {
    }

    static void closeAndExit(Worker worker, long closeSeconds) throws Exception {
        worker.close().get(closeSeconds, TimeUnit.SECONDS);
        var leaks = LeakRecorder.collect();
        if (!leaks.isEmpty()) {
            System.err.println("peer leaked " + leaks.size() + " buffer(s)");
            System.exit(3);
        }
        System.exit(0);
    }
}
