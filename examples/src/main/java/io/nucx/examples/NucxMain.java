package io.nucx.examples;

import picocli.CommandLine;
import io.nucx.examples.node.NodeCommand;
import picocli.CommandLine.Command;

/** {@code bin/nucx}: the tools, each a thin front over the library. */
@Command(name = "nucx", mixinStandardHelpOptions = true, version = "nucx 0.1.0",
        description = "UCX's communication model on Netty.",
        subcommands = {InfoCommand.class, PerftestCommand.class, CalibrateCommand.class, DemoCommand.class,
                NodeCommand.class, ConfigDocs.class, SweepReportCommand.class, AotTrainCommand.class,
                io.nucx.examples.soak.SoakCommand.class, CoresCommand.class, FirstMessageCommand.class})
public final class NucxMain implements Runnable {

    @Override
    public void run() {
        new CommandLine(this).usage(System.out);
    }

    public static void main(String[] args) {
        int code = new CommandLine(new NucxMain())
                .setExecutionExceptionHandler((ex, cmd, parsed) -> {
                    cmd.getErr().println("nucx " + cmd.getCommandName() + ": " + describe(ex));
                    return 255;
                })
                .execute(args);
        System.exit(code);
    }

    static String describe(Throwable t) {
        Throwable root = t;
        while (root.getCause() != null && (root instanceof java.util.concurrent.ExecutionException
                || root.getMessage() == null)) {
            root = root.getCause();
        }
        StringBuilder text = new StringBuilder(root.getMessage() != null ? root.getMessage() : root.toString());
        for (Throwable link = t; link != null; link = link == root ? null : link.getCause()) {
            for (Throwable also : link.getSuppressed()) { // e.g. an in-process perftest server's own failure
                text.append("; and: ").append(describe(also));
            }
        }
        return text.toString();
    }
}
