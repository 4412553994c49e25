package io.nucx.it;

import io.nucx.Worker;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The workers and peer processes a test opened, closed after it ({@code @RegisterExtension}): workers first, so each
 * says goodbye to peers that are still alive, then the peers (a stopped one is continued, then killed).
 */
final class OpenedResources implements AfterEachCallback {

    private final List<Worker> workers = new ArrayList<>();
    private final List<PeerProcess> peers = new ArrayList<>();

    /** Closes {@code w} after the test. */
    Worker worker(Worker w) {
        workers.add(w);
        return w;
    }

    /** Closes {@code p} after the test. */
    PeerProcess peer(PeerProcess p) {
        peers.add(p);
        return p;
    }

    @Override
    public void afterEach(ExtensionContext context) throws Exception {
        Exception first = null;
        for (Worker w : workers) {
            try {
                w.close().get(30, TimeUnit.SECONDS);
            } catch (Exception e) {
                first = first == null ? e : first;
            }
        }
        for (PeerProcess p : peers) {
            p.close();
        }
        workers.clear();
        peers.clear();
        if (first != null) {
            throw first;
        }
    }
}
