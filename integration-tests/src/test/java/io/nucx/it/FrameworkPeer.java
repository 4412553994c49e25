package io.nucx.it;

import io.nucx.examples.frameworks.FrameworkServer;
import io.nucx.transport.testing.LeakRecorder;

/**
 * The server process of the framework tests: {@link FrameworkServer} (args as its), with Netty's leak detector
 * recording; after {@code stop} it exits 0, or 3 when a buffer leaked.
 */
public final class FrameworkPeer {

    public static void main(String[] args) throws Exception {
        LeakRecorder.install();
        FrameworkServer.run(args);
        var leaks = LeakRecorder.collect();
        if (!leaks.isEmpty()) {
            System.err.println("server leaked " + leaks.size() + " buffer(s)");
            System.exit(3);
        }
        System.exit(0);
    }
}
