package io.nucx.examples;

import picocli.CommandLine;
import io.nucx.examples.node.NodeCommand;
import picocli.CommandLine.Command;

/** {@code bin/nucx}: the tools, each a thin front over the library. */
@Command(name = "nucx", mixinStandardHelpOptions = true, version = "nucx 0.1.0",
        description = "UCX's communication model on Netty.",
        subcommands = {InfoCommand.class, PerftestCommand.class, DemoCommand.class, NodeCommand.class,
                ConfigDocs.class, io.nucx.examples.soak.SoakCommand.class})
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
        return root.getMessage() != null ? root.getMessage() : root.toString();
    }
}
