package io.nucx.examples.perf;

import io.netty.buffer.Unpooled;
import io.netty.util.concurrent.Future;
import io.nucx.Endpoint;
import io.nucx.NucxBootstrap;
import io.nucx.Worker;
import io.nucx.WorkerAddress;
import io.nucx.protocol.amo.RemoteMemoryKey;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.lang.foreign.Arena;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;

/**
 * ucx_perftest's two roles over nucx. As with ucx_perftest, the server listens on a plain TCP port used only to set
 * up (the client sends the test parameters; both exchange worker addresses), then each side connects an endpoint to
 * the other and the client measures.
 */
public final class Perftest {

    /** How long either side waits for the run's end. */
    static final long RUN_TIMEOUT_SECONDS = 600;
    /**
     * How long a set-up read waits for the peer's next line: a minute beyond the longest warm-up a worker may do before
     * it starts (NUCX_WARMUP, at most 60 s), which each side's start, and so its next line, may include.
     */
    static final long SETUP_READ_TIMEOUT_SECONDS = 120;
    /** The server's line once its handlers are in place: the client sends nothing before it. */
    static final String READY = "ready";
    /** What the client sends in place of its worker's address when its worker could not start, then why. */
    static final String CLIENT_FAILED = "client-failed ";

    private Perftest() {
    }

    /** Told of each worker a run starts (to publish its metrics); does nothing by default. */
    private static volatile Consumer<Worker> onWorker = w -> { };

    /** {@code observer} is told of each worker a run starts from now on, e.g. to bind its metrics. */
    public static void onWorkerStarted(Consumer<Worker> observer) {
        onWorker = observer;
    }

    /** A worker with {@code config}, then the run's own settings ({@code -D bcopy|zcopy}, {@code -e}) on top. */
    static Worker startWorker(String name, Map<String, String> config, PerfParams params, boolean busyPoll)
            throws Exception {
        return startWorker(name, config, params, busyPoll, null);
    }

    /** @param stream stream_lat / stream_bw: the reader every endpoint's pipeline gets; null for the other tests */
    static Worker startWorker(String name, Map<String, String> config, PerfParams params, boolean busyPoll,
                              PerfStreamReader stream) throws Exception {
        NucxBootstrap b = new NucxBootstrap().name(name).busyPoll(busyPoll);
        if (stream != null) {
            b.endpointHandler(stream);
        }
        config.forEach(b::config);
        params.settings().forEach(b::config);
        Worker w = b.start();
        try {
            onWorker.accept(w);
        } catch (RuntimeException | Error e) {
            w.close().awaitUninterruptibly(10, TimeUnit.SECONDS); // a start that fails leaves no worker running
            throw e;
        }
        return w;
    }

    private static PerfStreamReader streamReader(PerfParams params) {
        return params.test().stream() ? new PerfStreamReader(params.messageSize(), params.test().pingPong()) : null;
    }

    /** Serves one test on {@code port}, printing what ucx_perftest's server prints. */
    public static void serve(int port, Map<String, String> config, boolean busyPoll, PrintStream out)
            throws Exception {
        try (ServerSocket listener = new ServerSocket()) {
            listener.setReuseAddress(true);
            listener.bind(new InetSocketAddress(port));
            out.println("Waiting for connection...");
            out.flush();
            try (Socket s = listener.accept()) {
                out.println("Accepted connection from " + s.getInetAddress().getHostAddress() + ":" + s.getPort());
                BufferedReader in = reader(s);
                PrintWriter w = writer(s);
                PerfParams params = PerfParams.decode(readLine(in, "test parameters"));
                new PerfReporter(out, false, false).banner(params);
                PerfStreamReader stream = streamReader(params);
                Worker worker = startWorker("perftest-server", config, params, busyPoll, stream);
                try {
                    w.println(worker.address().toHex());
                    // RMA tests: the memory the client puts into or gets from, registered on every RMA device
                    Arena arena = Arena.ofShared();
                    RemoteMemoryKey key = null;
                    if (params.test().rma()) {
                        key = worker.registerMemory(arena.allocate(Math.max(params.messageSize(), 8), 4096));
                        w.println(key.toHex());
                    }
                    w.flush();
                    String line = readLine(in, "client worker address");
                    if (line.startsWith(CLIENT_FAILED)) {
                        throw new IOException("the perftest client could not start its worker: "
                                + line.substring(CLIENT_FAILED.length()));
                    }
                    WorkerAddress client = WorkerAddress.fromHex(line);
                    Endpoint ep = worker.connect(client);
                    try {
                        TagPerfServer server = new TagPerfServer(worker, ep, params.messageSize(),
                                params.test().sync(), params.test().am(), params.freshData(), stream);
                        Future<Long> served = server.start();
                        // The client starts only after this line: an active message that came before its handler
                        // was set would be dropped (as UCX drops it), and am_lat would wait for a PONG for ever.
                        w.println(READY);
                        w.flush();
                        served.get(RUN_TIMEOUT_SECONDS, TimeUnit.SECONDS);
                        w.println("allocated " + server.allocationPerMessage()); // the client prints it
                        w.flush();
                    } finally {
                        if (key != null) {
                            worker.unregisterMemory(key);
                        }
                        arena.close();
                    }
                } finally {
                    worker.close().get(10, TimeUnit.SECONDS);
                }
            }
        }
    }

    /** Runs one test against a server, printing ucx_perftest's table; returns the final row. */
    public static PerfResult run(String host, int port, PerfParams params, Map<String, String> config,
                                 boolean busyPoll, PerfReporter reporter) throws Exception {
        return run(host, port, params, config, busyPoll, reporter, null);
    }

    /**
     * As {@link #run(String, int, PerfParams, Map, boolean, PerfReporter)}; {@code protocolCounts}, if not null,
     * receives how many messages each protocol carried from the client (its worker's counters) once the run is over.
     */
    public static PerfResult run(String host, int port, PerfParams params, Map<String, String> config,
                                 boolean busyPoll, PerfReporter reporter,
                                 Consumer<Map<String, Long>> protocolCounts) throws Exception {
        PerfStreamReader stream = streamReader(params);
        // This side's worker starts (and warms up) on a thread of its own while the set-up connection is made and the
        // parameters go: the server starts its worker as they arrive, so the two starts overlap, and a server process
        // still starting overlaps this side's start too. Not NucxBootstrap.startAsync(): it validates the settings,
        // probes the transports and makes the loop on the calling thread first (~0.4 s of a cold JVM's classes),
        // which would put that before the parameters again.
        CompletableFuture<Worker> starting = new CompletableFuture<>();
        Thread starter = new Thread(() -> {
            try {
                starting.complete(startWorker("perftest-client", config, params, busyPoll, stream));
            } catch (Throwable t) {
                starting.completeExceptionally(t);
            }
        }, "perftest-client-start");
        starter.setDaemon(true);
        starter.start();
        try (Socket s = connect(host, port, starting)) {
            BufferedReader in = reader(s);
            PrintWriter w = writer(s);
            w.println(params.encode());
            w.flush();
            Worker worker;
            try {
                worker = started(starting);
            } catch (Exception e) {
                // The server started its worker for these parameters: it says why none came from this side.
                w.println(CLIENT_FAILED + String.valueOf(e).replace('\n', ' '));
                w.flush();
                throw e;
            }
            WorkerAddress server = WorkerAddress.fromHex(readLine(in, "server worker address"));
            RemoteMemoryKey key = params.test().rma()
                    ? RemoteMemoryKey.fromHex(readLine(in, "server memory key")) : null;
            w.println(worker.address().toHex());
            w.flush();
            Endpoint ep = worker.connect(server);
            String ready = readLine(in, "ready line");
            if (!READY.equals(ready)) {
                throw new IOException("perftest server sent '" + ready + "' where '" + READY + "' was expected");
            }
            reporter.header(params);
            TagPerfClient client = new TagPerfClient(worker, ep, params, reporter, key, stream);
            PerfResult r = client.start().get(RUN_TIMEOUT_SECONDS, TimeUnit.SECONDS);
            reporter.finalRow(r);
            ep.tagSend(PerfTags.FINISH, Unpooled.EMPTY_BUFFER).sync();
            if (reporter.windowIterations() > 0) {
                reporter.steadyState();
            }
            reporter.allocation(client.allocationPerIteration(), serverAllocation(in));
            if (protocolCounts != null) {
                protocolCounts.accept(worker.counters().snapshot());
            }
            return r;
        } finally {
            // Whatever failed, the worker is closed once its start is over (a start that failed left none).
            Worker worker = startedOrNull(starting);
            if (worker != null) {
                worker.close().get(10, TimeUnit.SECONDS);
            }
        }
    }

    /** The worker {@code starting} gives, or what its start threw. */
    private static Worker started(CompletableFuture<Worker> starting) throws Exception {
        try {
            return starting.get(SETUP_READ_TIMEOUT_SECONDS, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof Exception cause) {
                throw cause;
            }
            if (e.getCause() instanceof Error error) {
                throw error;
            }
            throw e;
        } catch (TimeoutException e) {
            throw new TimeoutException("the perftest client's worker did not start within "
                    + SETUP_READ_TIMEOUT_SECONDS + " s");
        }
    }

    /**
     * Once {@code starting}'s start is over, its worker, or null if the start failed. A start still going after the
     * set-up wait, or a wait interrupted, leaves its worker to be closed when the start ends.
     */
    private static Worker startedOrNull(CompletableFuture<Worker> starting) {
        try {
            return starting.get(SETUP_READ_TIMEOUT_SECONDS, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // this wait's interrupt, not one the start failed with
        } catch (ExecutionException | TimeoutException e) {
            // a failed start left no worker; one still going closes its worker when it ends
        }
        starting.thenAccept(Worker::close);
        return null;
    }

    /** The server's "allocated N" line after FINISH; -1 if it sends none (an older server). */
    private static double serverAllocation(BufferedReader in) {
        try {
            String line = in.readLine();
            return line != null && line.startsWith("allocated ") ? Double.parseDouble(line.substring(10)) : -1;
        } catch (IOException | NumberFormatException e) {
            return -1;
        }
    }

    /**
     * Runs one test with the server on another thread of this JVM (self, or any transport without a second
     * process), printing the client's table; returns the final row.
     */
    public static PerfResult runInProcess(PerfParams params, Map<String, String> config, boolean busyPoll,
                                          PerfReporter reporter) throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        ExecutorService server = Executors.newSingleThreadExecutor();
        try {
            PrintStream quiet = new PrintStream(OutputStream.nullOutputStream());
            int p = port;
            java.util.concurrent.Future<?> served = server.submit(() -> {
                serve(p, config, busyPoll, quiet);
                return null;
            });
            PerfResult r;
            try {
                r = run("127.0.0.1", port, params, config, busyPoll, reporter);
            } catch (Exception clientFailure) {
                // A server that failed first closed its worker, and the client only sees its connection go: the
                // server's own failure is the cause to report.
                try {
                    served.get(10, TimeUnit.SECONDS);
                } catch (ExecutionException serverFailure) {
                    clientFailure.addSuppressed(serverFailure.getCause());
                } catch (TimeoutException stillServing) {
                    // the server saw nothing wrong yet: the client's failure is the whole story
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt(); // the client's failure still goes up
                }
                throw clientFailure;
            }
            served.get(60, TimeUnit.SECONDS);
            return r;
        } finally {
            server.shutdownNow();
        }
    }

    /** The server may still be starting: retry the set-up connection for a while, as a person would. */
    static Socket connect(String host, int port) throws Exception {
        return connect(host, port, null);
    }

    /**
     * As {@link #connect(String, int)}; an attempt that fails once this side's worker start ({@code starting}, if not
     * null) has failed ends the retries with what the start threw, a bad setting named, rather than the server not
     * being there yet. A server that is there is always reached, so that it hears why no worker comes.
     */
    private static Socket connect(String host, int port, CompletableFuture<Worker> starting) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            Socket s = new Socket();
            try {
                s.connect(new InetSocketAddress(host, port), 5000);
                return s;
            } catch (IOException e) {
                s.close();
                if (starting != null && starting.isCompletedExceptionally()) {
                    started(starting); // throws what the start threw
                }
                if (System.nanoTime() > deadline) {
                    throw new IOException("cannot reach perftest server " + host + ":" + port + ": " + e.getMessage(), e);
                }
                Thread.sleep(100);
            }
        }
    }

    static BufferedReader reader(Socket s) throws IOException {
        s.setSoTimeout((int) TimeUnit.SECONDS.toMillis(SETUP_READ_TIMEOUT_SECONDS));
        return new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.US_ASCII));
    }

    static PrintWriter writer(Socket s) throws IOException {
        return new PrintWriter(s.getOutputStream(), false, StandardCharsets.US_ASCII);
    }

    static String readLine(BufferedReader in, String what) throws IOException {
        String line = in.readLine();
        if (line == null) {
            throw new IOException("perftest peer closed the set-up connection before sending the " + what);
        }
        return line;
    }
}
