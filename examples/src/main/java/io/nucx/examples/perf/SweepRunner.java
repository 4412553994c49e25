package io.nucx.examples.perf;

import io.netty.buffer.Unpooled;
import io.nucx.Endpoint;
import io.nucx.Worker;
import io.nucx.WorkerAddress;
import io.nucx.protocol.select.ProtoTable;
import io.nucx.protocol.select.SelectionKey;

import java.io.BufferedReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.net.Socket;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The measuring side of one sweep run against a {@link SweepServer}: a worker with the run's settings, perftest's
 * client loop ({@link TagPerfClient}), then what the run needs besides the timing: how many messages each protocol
 * carried (the client worker's counters: the proof of which protocol a forced run used) and the protocol table the
 * worker's selection built for the send buffer's memory (direct).
 */
public final class SweepRunner {

    /** One run's outcome. */
    public record Run(PerfResult result, Map<String, Long> protocolCounts, ProtoTable table) {
    }

    private final String host;
    private final int port;
    private final boolean busyPoll;

    public SweepRunner(String host, int port, boolean busyPoll) {
        this.host = host;
        this.port = port;
        this.busyPoll = busyPoll;
    }

    /** Runs {@code params} with {@code settings} on both sides. */
    public Run run(Map<String, String> settings, PerfParams params) throws Exception {
        Worker worker = Perftest.startWorker("sweep-client", settings, params, busyPoll);
        try (Socket s = Perftest.connect(host, port)) {
            BufferedReader in = Perftest.reader(s);
            PrintWriter w = Perftest.writer(s);
            w.println(SweepServer.encodeSettings(settings));
            w.println(params.encode());
            w.flush();
            WorkerAddress server = WorkerAddress.fromHex(Perftest.readLine(in, "server worker address"));
            w.println(worker.address().toHex());
            w.flush();
            // The table before the run: once FINISH is through, the server's worker (and its shm socket) is gone.
            ProtoTable table = worker.protocolTable(server, SelectionKey.MemoryType.DIRECT);
            Endpoint ep = worker.connect(server);
            PerfReporter quiet = new PerfReporter(new PrintStream(OutputStream.nullOutputStream()), true, false);
            PerfResult r = new TagPerfClient(worker, ep, params, quiet).start()
                    .get(Perftest.RUN_TIMEOUT_SECONDS, TimeUnit.SECONDS);
            ep.tagSend(PerfTags.FINISH, Unpooled.EMPTY_BUFFER).sync();
            return new Run(r, worker.counters().snapshot(), table);
        } finally {
            worker.close().get(10, TimeUnit.SECONDS);
        }
    }

    /** Ends the server. */
    public void quit() throws Exception {
        try (Socket s = Perftest.connect(host, port)) {
            PrintWriter w = Perftest.writer(s);
            w.println(SweepServer.QUIT);
            w.flush();
        }
    }
}
