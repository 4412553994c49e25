package io.nucx.examples;

import io.nucx.examples.perf.SweepReport;
import io.nucx.examples.perf.SweepSummary;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;

/** {@code nucx sweep-report}: sweeps' runs files (nucx's and ucx_perftest's) into tables and plots. */
@Command(name = "sweep-report", mixinStandardHelpOptions = true,
        description = "Summarise runs.csv files of perftest --sweep and of bench/sweep.sh's ucx_perftest runs: "
                + "summary.csv, report.md (markdown tables) and a PNG per transport set of nucx against UCX.")
final class SweepReportCommand implements Callable<Integer> {

    @Parameters(paramLabel = "RUNS.csv", arity = "1..*", description = "Runs files (the columns of perftest --sweep).")
    List<Path> runs;

    @Option(names = "--out", paramLabel = "DIR", required = true, description = "Where the report goes.")
    Path out;

    @Option(names = "--plot-prefix", paramLabel = "PATH", description = "What report.md puts before each plot's file "
            + "name in its links (default: none).", defaultValue = "")
    String plotPrefix;

    @Option(names = "--metric", paramLabel = "METRIC", description = "What runs are compared by: overall | percentile "
            + "(default: ${DEFAULT-VALUE}).", defaultValue = "overall")
    String metric;

    @Override
    public Integer call() throws Exception {
        SweepReport.write(runs, out, plotPrefix, SweepSummary.Metric.of(metric));
        System.out.println("report: " + out.resolve("report.md"));
        return 0;
    }
}
