package io.nucx.examples;

import io.nucx.examples.perf.PerfTestType;
import io.nucx.examples.perf.ServerProcess;
import io.nucx.examples.perf.Sweep;
import io.nucx.examples.perf.SweepRunner;
import io.nucx.examples.perf.SweepSummary;
import io.nucx.protocol.ProtocolConfig;
import io.nucx.transport.NucxConfig;
import picocli.CommandLine;

import java.nio.file.Files;

/** {@code nucx perftest --sweep}: the options of {@link PerftestCommand} turned into a {@link Sweep}, and its server. */
final class SweepCommand {

    private SweepCommand() {
    }

    static int run(PerftestCommand c, boolean busyPoll) throws Exception {
        CommandLine cmd = c.spec.commandLine();
        if (!(c.sweepRunSeconds > 0 && c.sweepRunSeconds <= 600) || !(c.sweepWarmupSeconds >= 0
                && c.sweepWarmupSeconds <= 3600)) {
            throw new CommandLine.ParameterException(cmd, "--run-time must be in (0, 600] and --sweep-warmup in "
                    + "[0, 3600] seconds");
        }
        Sweep.Options options;
        try {
            options = new Sweep.Options(c.sweepTls, PerfTestType.of(c.test), c.sweepMin, c.sweepMax, c.sweepRounds,
                    (long) (c.sweepRunSeconds * 1e9), (long) (c.sweepWarmupSeconds * 1e9), c.window, c.sweepOut,
                    NucxConfig.fromEnvironment().get(ProtocolConfig.PERF_PROFILE), c.percentile,
                    SweepSummary.Metric.of(c.sweepMetric),
                    "bin/nucx " + String.join(" ", cmd.getParseResult().originalArgs()), c.freshData);
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(cmd, e.getMessage());
        }
        Files.createDirectories(c.sweepOut);
        if (c.host != null) {
            new Sweep(new SweepRunner(c.host, c.port, busyPoll), options, System.out).run();
            return 0;
        }
        try (ServerProcess server = ServerProcess.start(c.sweepOut.resolve("server.log"), busyPoll)) {
            new Sweep(server.runner(), options, System.out).run();
        }
        return 0;
    }
}
