package io.nucx.examples.perf;

import io.nucx.Endpoint;
import io.nucx.Worker;
import io.nucx.WorkerAddress;

import java.io.BufferedReader;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The answering side of a sweep: perftest's server, serving one run after another on one port, each run with the
 * worker settings the client names (transports, forced protocols), so a whole sweep runs against one warm JVM. Each
 * run is perftest's set-up with one more line in front:
 * <pre>
 *   client: SETTINGS   "-" or NAME=VALUE;NAME=VALUE (NUCX_* names without the prefix); "quit" ends the server
 *   client: PARAMS     perftest's parameters line
 *   server: ADDRESS    its new worker's address (hex)
 *   client: ADDRESS    the client worker's address (hex)
 * </pre>
 * then the test runs as perftest's, and the server's worker closes before the next connection is taken.
 */
public final class SweepServer {

    /** The settings line that ends the server. */
    static final String QUIT = "quit";

    private SweepServer() {
    }

    /** Serves runs on {@code port} until a client says {@link #QUIT}; one line per run to {@code log}. */
    public static void serve(int port, boolean busyPoll, PrintStream log) throws Exception {
        try (ServerSocket listener = new ServerSocket()) {
            listener.setReuseAddress(true);
            listener.bind(new InetSocketAddress("127.0.0.1", port));
            log.println("sweep server on 127.0.0.1:" + port);
            log.flush();
            while (true) {
                try (Socket s = listener.accept()) {
                    BufferedReader in = Perftest.reader(s);
                    String settingsLine = Perftest.readLine(in, "run settings");
                    if (settingsLine.equals(QUIT)) {
                        log.println("quit");
                        return;
                    }
                    Map<String, String> settings = decodeSettings(settingsLine);
                    PerfParams params = PerfParams.decode(Perftest.readLine(in, "test parameters"));
                    log.println("run " + settingsLine + " " + params.encode());
                    log.flush();
                    serveOne(s, in, settings, params, busyPoll);
                } catch (Exception e) {
                    // One run failing (its client gone, a bad line) must not end the sweep's other runs.
                    log.println("run failed: " + e);
                    log.flush();
                }
            }
        }
    }

    private static void serveOne(Socket s, BufferedReader in, Map<String, String> settings, PerfParams params,
                                 boolean busyPoll) throws Exception {
        PrintWriter w = Perftest.writer(s);
        Worker worker = Perftest.startWorker("sweep-server", settings, params, busyPoll);
        try {
            w.println(worker.address().toHex());
            w.flush();
            WorkerAddress client = WorkerAddress.fromHex(Perftest.readLine(in, "client worker address"));
            Endpoint ep = worker.connect(client);
            new TagPerfServer(worker, ep, params.messageSize(), params.test().sync(), false,
                    params.freshData()).start()
                    .get(Perftest.RUN_TIMEOUT_SECONDS, TimeUnit.SECONDS);
        } finally {
            worker.close().get(10, TimeUnit.SECONDS);
        }
    }

    /** {@code NAME=VALUE;NAME=VALUE}, or "-" for none. Values may not hold ';' or a line break. */
    static String encodeSettings(Map<String, String> settings) {
        if (settings.isEmpty()) {
            return "-";
        }
        StringBuilder b = new StringBuilder();
        settings.forEach((k, v) -> {
            if (k.contains("=") || k.contains(";") || v.contains(";") || v.contains("\n")) {
                throw new IllegalArgumentException("setting " + k + "=" + v + " cannot travel on the set-up line");
            }
            b.append(b.isEmpty() ? "" : ";").append(k).append('=').append(v);
        });
        return b.toString();
    }

    static Map<String, String> decodeSettings(String line) {
        Map<String, String> out = new LinkedHashMap<>();
        if (line.equals("-")) {
            return out;
        }
        for (String kv : line.split(";")) {
            int eq = kv.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("bad setting '" + kv + "' in run settings '" + line + "'");
            }
            out.put(kv.substring(0, eq), kv.substring(eq + 1));
        }
        return out;
    }
}
