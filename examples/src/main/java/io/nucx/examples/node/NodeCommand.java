package io.nucx.examples.node;

import io.nucx.transport.diag.LeakLog;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.net.InetAddress;
import java.util.concurrent.Callable;

/**
 * {@code nucx node}: a worker driven over a control channel, for multi-node tests (containers, network namespaces).
 * It starts a worker from {@code NUCX_*}, prints {@code ADDRESS <hex>} and a ready line, and executes the commands of
 * {@link NodeCommands} until told {@code stop} or terminated (SIGTERM closes the worker gracefully first). Netty's
 * leak detector runs at PARANOID; leaks are reported by the {@code leaks} command and by exit status 3.
 */
@Command(name = "node", mixinStandardHelpOptions = true,
        description = "Run a worker driven over a control channel (line protocol; see NodeCommands), for "
                + "multi-node tests in containers or network namespaces.")
public final class NodeCommand implements Callable<Integer> {

    /** Printed once the control channel accepts commands; wait strategies look for it. */
    public static final String READY = "nucx node ready";

    @Option(names = "--control", paramLabel = "unix:PATH|tcp:[HOST:]PORT", defaultValue = "tcp:7000",
            description = "Where the control channel listens (default ${DEFAULT-VALUE}).")
    String control;

    @Option(names = "--name", description = "The worker's name (default: the host name).")
    String name;

    @Option(names = "--max-seconds", defaultValue = "3600",
            description = "Exit after this long even if never told to stop (default ${DEFAULT-VALUE}).")
    long maxSeconds;

    @Override
    public Integer call() throws Exception {
        LeakLog.install(); // before any buffer class initialises
        String workerName = name != null ? name : InetAddress.getLocalHost().getHostName();
        NodeCommands node = NodeCommands.start(workerName);
        ControlServer server = ControlServer.open(control, node);
        Thread hook = new Thread(() -> {
            try {
                node.closeWorker(10); // SIGTERM (docker stop): peers hear EP_REMOVED rather than a reset
            } catch (Exception e) {
                System.err.println("close on termination: " + e);
            }
        }, "node-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);
        Thread.ofPlatform().daemon().name("control-accept").start(server::serve);
        System.out.println("ADDRESS " + node.address());
        System.out.println(READY + ": " + workerName + " on " + server.describe());
        System.out.flush();
        boolean told = node.awaitStop(maxSeconds);
        server.close();
        if (!told) {
            System.err.println("node " + workerName + ": not told to stop within " + maxSeconds + " s; exiting");
            node.closeWorker(10);
        }
        Runtime.getRuntime().removeShutdownHook(hook);
        int leaks = LeakLog.reported().size();
        if (leaks > 0) {
            System.err.println("node " + workerName + " leaked " + leaks + " buffer(s)");
            return 3;
        }
        return told ? 0 : 4;
    }
}
