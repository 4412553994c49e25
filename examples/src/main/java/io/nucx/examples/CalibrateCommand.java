package io.nucx.examples;

import io.nucx.examples.perf.Calibration;
import io.nucx.examples.perf.ServerProcess;
import io.nucx.transport.NucxConfig;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * {@code nucx calibrate}: measure this machine's lanes and write the performance profile NUCX_PERF_PROFILE loads
 * ({@link Calibration}).
 */
@Command(name = "calibrate", mixinStandardHelpOptions = true,
        description = "Measure each transport's latency, overhead, bandwidth and registration cost, and what a "
                + "rendezvous costs beyond them, here (two processes, real lanes) and write a performance profile "
                + "for NUCX_PERF_PROFILE.")
final class CalibrateCommand implements Callable<Integer> {

    @Option(names = "--tls", paramLabel = "TLS", split = ";", description = "Transport sets whose AM lane to "
            + "measure, ';'-separated NUCX_TLS values (default: ${DEFAULT-VALUE}).", defaultValue = "tcp;shm")
    List<String> amSets;

    @Option(names = "--rma", paramLabel = "TLS", split = ";", description = "Transport sets whose RMA lane to "
            + "measure by rendezvous reads (default: ${DEFAULT-VALUE}; empty for none).", defaultValue = "shm,cma")
    List<String> rmaSets;

    @Option(names = {"-o", "--out"}, paramLabel = "FILE", description = "The profile to write "
            + "(default: ${DEFAULT-VALUE}).", defaultValue = "bench/out/perf-profile.txt")
    Path out;

    @Option(names = "--rounds", paramLabel = "N", description = "Rounds of every measurement, back to back; each "
            + "figure is the median (a rendezvous's excess over eager: the median of each round's difference) "
            + "(default: ${DEFAULT-VALUE}).", defaultValue = "3")
    int rounds;

    @Option(names = "--run-time", paramLabel = "SECONDS", description = "How long each run should take "
            + "(default: ${DEFAULT-VALUE}).", defaultValue = "0.3")
    double runSeconds;

    @Option(names = "--warmup", paramLabel = "SECONDS", description = "Unrecorded runs first, so the JIT compiler "
            + "is done (default: ${DEFAULT-VALUE}).", defaultValue = "10")
    double warmupSeconds;

    @Option(names = "-R", paramLabel = "RANK", description = "Percentile of a ping-pong's iterations taken as its "
            + "time (default: ${DEFAULT-VALUE}; 10 on a machine busy with other work).", defaultValue = "50")
    double percentile;

    @Option(names = "--fresh-data", description = "Every run writes its send buffers before each send, as an "
            + "application sending new data does (perftest --fresh-data): the figures then price cma's read of "
            + "lines the peer has just written.")
    boolean freshData;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        NucxConfig config = NucxConfig.fromEnvironment().validate();
        if (!(runSeconds > 0 && runSeconds <= 60) || !(warmupSeconds >= 0 && warmupSeconds <= 600)) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--run-time must be in (0, 60] and "
                    + "--warmup in [0, 600] seconds");
        }
        List<String> rma = rmaSets.stream().filter(s -> !s.isBlank()).toList();
        Calibration.Options options;
        try {
            options = new Calibration.Options(amSets, rma, rounds, (long) (runSeconds * 1e9),
                    (long) (warmupSeconds * 1e9), percentile, out,
                    "bin/nucx " + String.join(" ", spec.commandLine().getParseResult().originalArgs()), freshData);
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
        }
        if (out.toAbsolutePath().getParent() != null) {
            Files.createDirectories(out.toAbsolutePath().getParent());
        }
        Path log = out.resolveSibling(out.getFileName() + ".server.log");
        try (ServerProcess server = ServerProcess.start(log, PerftestCommand.busyPoll(config))) {
            new Calibration(server.runner(), options, System.out).run();
        }
        return 0;
    }
}
