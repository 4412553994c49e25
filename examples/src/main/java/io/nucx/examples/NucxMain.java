package io.nucx.examples;

import io.nucx.examples.node.NodeCommand;
import io.nucx.examples.soak.SoakCommand;
import picocli.CommandLine;
import picocli.CommandLine.Command;

import java.util.List;
import java.util.concurrent.ExecutionException;

/**
 * {@code bin/nucx}: the tools, each a thin front over the library. The command line holds only the subcommand named
 * (every one for help or a name it does not know): picocli reads every option of every subcommand it is given, some
 * 40 ms of each start (BENCHMARKS.md, first-message).
 */
@Command(name = "nucx", mixinStandardHelpOptions = true, version = "nucx 0.1.0",
        description = "UCX's communication model on Netty.")
public final class NucxMain implements Runnable {

    private static final List<Class<?>> SUBCOMMANDS = List.of(InfoCommand.class, PerftestCommand.class,
            CalibrateCommand.class, DemoCommand.class, NodeCommand.class, ConfigDocs.class, SweepReportCommand.class,
            AotTrainCommand.class, SoakCommand.class, CoresCommand.class, FirstMessageCommand.class);

    @Override
    public void run() {
        commandLine().usage(System.out);
    }

    public static void main(String[] args) {
        int code = commandLine(args)
                .setExecutionExceptionHandler((ex, cmd, parsed) -> {
                    cmd.getErr().println("nucx " + cmd.getCommandName() + ": " + describe(ex));
                    return 255;
                })
                .execute(args);
        System.exit(code);
    }

    /** The command line for {@code args}: with the subcommand their first word names, else with every one. */
    static CommandLine commandLine(String... args) {
        CommandLine top = new CommandLine(new NucxMain());
        Class<?> named = null;
        for (Class<?> c : SUBCOMMANDS) {
            if (args.length > 0 && c.getAnnotation(Command.class).name().equals(args[0])) {
                named = c;
            }
        }
        for (Class<?> c : named == null ? SUBCOMMANDS : List.of(named)) {
            top.addSubcommand(c);
        }
        return top;
    }

    static String describe(Throwable t) {
        Throwable root = t;
        while (root.getCause() != null && (root instanceof ExecutionException
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
