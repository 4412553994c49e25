package io.nucx.examples.node;

import io.netty.channel.ChannelFuture;
import io.netty.util.concurrent.Future;
import io.nucx.Endpoint;
import io.nucx.EndpointException;
import io.nucx.ErrorMode;
import io.nucx.NucxBootstrap;
import io.nucx.NucxClosedException;
import io.nucx.Worker;
import io.nucx.WorkerAddress;
import io.nucx.protocol.tag.TagMessage;
import io.nucx.transport.diag.LeakLog;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * What a node does when told: the only class of the node program that uses nucx's API (so that an API change is
 * ported here alone). One worker, configured from {@code NUCX_*}; peers by the name the test gives them. Every wait
 * is bounded.
 *
 * <pre>
 * address                               the worker's address, hex
 * connect PEER ADDRESS [peer|failover|none]   an endpoint to that address, known as PEER from now on (replaces one);
 *                                       without a mode, the worker's (NUCX_ERR_MODE)
 * wireup PEER [timeout=S]               waits until PEER's endpoint is wired up
 * send PEER STREAM COUNT SIZES [window=W] [sync] [timeout=S]
 *                                       COUNT tagged messages of stream STREAM (tag STREAM&lt;&lt;32|seq, sizes cycling
 *                                       through SIZES, e.g. 0,100,8k,1m) with at most W outstanding; answers
 *                                       sent=N failed=F pending=P causes=Class:n,... firstFail=MS lastFail=MS
 *                                       (epoch milliseconds; a send issued after its endpoint ended counts as the
 *                                       endpoint's failure)
 * recv STREAM COUNT SIZES [timeout=S]   receives COUNT messages of STREAM in order, each checked byte for byte and
 *                                       by sequence number; answers received=N, else an error naming the first fault
 * progress STREAM                       messages of STREAM received and checked so far
 * endpoint PEER                         active=B error=Class at=MS message=...  (error=none while it works)
 * lanes PEER                            the lanes PEER's endpoint uses
 * laneinfo ADDRESS [peer|failover|none] the lanes an endpoint to ADDRESS would choose and why (as nucx info --lanes)
 * counters                              protocol and wireup counters, name=value
 * state                                 endpoints=N unexpected=N held=N
 * closelane PEER INDEX                  takes one lane of PEER's endpoint down
 * close PEER [timeout=S]                closes PEER's endpoint gracefully
 * leaks                                 leaks=N [first report]: Netty's PARANOID detector since start
 * stop                                  closes the worker, answers leaks=N, and the process exits (3 on a leak)
 * </pre>
 */
final class NodeCommands implements ControlServer.Executor {

    private static final long DEFAULT_TIMEOUT_S = 120;
    private static final int MAX_COUNT = 1_000_000;

    private final Worker worker;
    private final Map<String, Peer> peers = new ConcurrentHashMap<>();
    private final Map<Integer, AtomicInteger> progress = new ConcurrentHashMap<>();
    private final CountDownLatch stopped = new CountDownLatch(1);

    /** An endpoint and when it failed (epoch ms, 0 while it works). */
    private static final class Peer {
        final Endpoint ep;
        volatile long errorAt;

        Peer(String name, Endpoint ep) {
            this.ep = ep;
            ep.errorFuture().addListener(f -> {
                errorAt = System.currentTimeMillis();
                System.err.println(Instant.ofEpochMilli(errorAt) + " endpoint to " + name + " failed: "
                        + f.cause());
            });
        }
    }

    private NodeCommands(Worker worker) {
        this.worker = worker;
    }

    /** Starts the worker: settings from NUCX_* variables and nucx.* properties. */
    static NodeCommands start(String name) throws Exception {
        return new NodeCommands(new NucxBootstrap().name(name).start());
    }

    String address() {
        return worker.address().toHex();
    }

    /** Closes the worker gracefully (endpoints tell their peers), at most {@code seconds}. */
    void closeWorker(long seconds) throws Exception {
        worker.close().get(seconds, TimeUnit.SECONDS);
    }

    boolean awaitStop(long seconds) throws InterruptedException {
        return stopped.await(seconds, TimeUnit.SECONDS);
    }

    @Override
    public String execute(String verb, List<String> args) throws Exception {
        Args a = new Args(verb, args);
        return switch (verb) {
            case "address" -> address();
            case "connect" -> connect(a.word(0), a.word(1), a.optionalWord(2, null));
            case "wireup" -> {
                Peer p = peer(a.word(0));
                if (!p.ep.wireupFuture().await(a.seconds(), TimeUnit.SECONDS)) {
                    throw new IllegalStateException("not wired up within " + a.seconds() + " s");
                }
                if (!p.ep.wireupFuture().isSuccess()) {
                    throw new IllegalStateException("wireup failed: " + p.ep.wireupFuture().cause());
                }
                yield "wired";
            }
            case "send" -> send(peer(a.word(0)), a.integer(1), a.count(2), Payload.sizes(a.word(3)),
                    (int) a.option("window", 16), a.flag("sync"), a.seconds());
            case "recv" -> recv(a.integer(0), a.count(1), Payload.sizes(a.word(2)), a.seconds());
            case "progress" -> Integer.toString(progress.computeIfAbsent(a.integer(0), s -> new AtomicInteger()).get());
            case "endpoint" -> endpoint(peer(a.word(0)));
            case "lanes" -> peer(a.word(0)).ep.laneNames().get(10, TimeUnit.SECONDS).toString();
            case "laneinfo" -> worker.laneInfo(WorkerAddress.fromHex(a.word(0)), mode(a.optionalWord(1, "peer")));
            case "counters" -> counters();
            case "state" -> worker.eventLoop().submit(() -> "endpoints=" + worker.endpoints().size()
                    + " unexpected=" + worker.unexpectedCount() + " held=" + worker.heldReceives())
                    .get(10, TimeUnit.SECONDS);
            case "closelane" -> {
                peer(a.word(0)).ep.closeLane(a.integer(1)).get(10, TimeUnit.SECONDS);
                yield "closed";
            }
            case "close" -> {
                Endpoint ep = peer(a.word(0)).ep;
                ep.close();
                if (!ep.closeFuture().await(a.seconds(), TimeUnit.SECONDS)) {
                    throw new IllegalStateException("not closed within " + a.seconds() + " s");
                }
                yield "closed";
            }
            case "leaks" -> leaks();
            case "stop" -> {
                closeWorker(30);
                yield leaks();
            }
            default -> throw new IllegalArgumentException("unknown command '" + verb + "'");
        };
    }

    @Override
    public void afterReply(String verb) {
        if (verb.equals("stop")) {
            stopped.countDown();
        }
    }

    private String connect(String name, String hex, String mode) {
        WorkerAddress address = WorkerAddress.fromHex(hex);
        Endpoint ep = mode == null ? worker.connect(address) : worker.connect(address, mode(mode));
        peers.put(name, new Peer(name, ep));
        return "connecting";
    }

    private static ErrorMode mode(String name) {
        return switch (name) {
            case "peer" -> ErrorMode.PEER;
            case "failover" -> ErrorMode.FAILOVER;
            case "none" -> ErrorMode.NONE;
            default -> throw new IllegalArgumentException("error mode '" + name + "': expected peer, failover, none");
        };
    }

    private Peer peer(String name) {
        Peer p = peers.get(name);
        if (p == null) {
            throw new IllegalArgumentException("no peer '" + name + "' (connect it first); known: " + peers.keySet());
        }
        return p;
    }

    private static String send(Peer peer, int stream, int count, int[] sizes, int window, boolean sync,
                               long seconds) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        Semaphore inFlight = new Semaphore(Math.max(1, window));
        AtomicInteger sent = new AtomicInteger();
        Map<String, Integer> causes = new TreeMap<>();
        long[] failAt = {0, 0};
        int issued = 0;
        for (; issued < count; issued++) {
            long left = deadline - System.nanoTime();
            if (left <= 0 || !inFlight.tryAcquire(left, TimeUnit.NANOSECONDS)) {
                break;
            }
            var msg = Payload.message(stream, issued, sizes[issued % sizes.length]);
            long tag = Payload.tag(stream, issued);
            ChannelFuture f = sync ? peer.ep.tagSendSync(tag, msg) : peer.ep.tagSend(tag, msg);
            f.addListener(done -> {
                if (done.isSuccess()) {
                    sent.incrementAndGet();
                } else {
                    long now = System.currentTimeMillis();
                    synchronized (causes) {
                        causes.merge(failureOf(done.cause()).getClass().getSimpleName(), 1, Integer::sum);
                        failAt[0] = failAt[0] == 0 ? now : Math.min(failAt[0], now);
                        failAt[1] = Math.max(failAt[1], now);
                    }
                }
                inFlight.release();
            });
        }
        int outstanding = Math.max(1, window);
        long left = Math.max(0, deadline - System.nanoTime());
        boolean drained = inFlight.tryAcquire(outstanding, left, TimeUnit.NANOSECONDS);
        if (drained) {
            inFlight.release(outstanding);
        }
        synchronized (causes) {
            int failed = causes.values().stream().mapToInt(Integer::intValue).sum();
            int pending = issued - sent.get() - failed;
            StringBuilder out = new StringBuilder().append("sent=").append(sent.get()).append(" failed=")
                    .append(failed).append(" pending=").append(pending).append(" unissued=").append(count - issued);
            out.append(" causes=").append(causes.isEmpty() ? "none" : String.join(",",
                    causes.entrySet().stream().map(e -> e.getKey() + ":" + e.getValue()).toList()));
            out.append(" firstFail=").append(failAt[0]).append(" lastFail=").append(failAt[1]);
            return out.toString();
        }
    }

    /**
     * What failed a send: the endpoint's failure when the send was issued after it (a write on an ended endpoint fails
     * with a {@link NucxClosedException} caused by why it ended), else the send's own cause.
     */
    private static Throwable failureOf(Throwable cause) {
        return cause instanceof NucxClosedException closed && closed.getCause() instanceof EndpointException why
                ? why : cause;
    }

    private String recv(int stream, int count, int[] sizes, long seconds) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        AtomicInteger done = progress.computeIfAbsent(stream, s -> new AtomicInteger());
        List<Future<TagMessage>> posted = new ArrayList<>(count);
        for (int i = 0; i < count; i++) { // posted in order, so the k-th one matches the k-th message of the stream
            posted.add(worker.tagRecv(Payload.tag(stream, 0), Payload.STREAM_MASK));
        }
        String problem = null;
        int k = 0;
        try {
            for (; k < count && problem == null; k++) {
                Future<TagMessage> f = posted.get(k);
                long left = deadline - System.nanoTime();
                if (left <= 0 || !f.await(left, TimeUnit.NANOSECONDS)) {
                    problem = "timeout after " + seconds + " s waiting for message " + k;
                    break;
                }
                if (!f.isSuccess()) {
                    problem = "receive " + k + " failed: " + chain(f.cause());
                    break;
                }
                TagMessage m = f.getNow();
                try {
                    int seq = Payload.seq(m.tag());
                    problem = seq != k ? "stream " + stream + ": message " + seq + " arrived as number " + k
                            + " (lost, duplicated or out of order)"
                            : Payload.check(stream, k, sizes[k % sizes.length], m.content());
                } finally {
                    m.release();
                }
                if (problem == null) {
                    done.incrementAndGet();
                }
            }
        } finally {
            for (int i = k; i < count; i++) { // not waited for: cancel, or release what still arrives
                Future<TagMessage> f = posted.get(i);
                f.cancel(false);
                f.addListener(x -> {
                    if (x.isSuccess()) {
                        ((TagMessage) x.getNow()).release();
                    }
                });
            }
        }
        if (problem != null) {
            throw new IllegalStateException("received=" + done.get() + " of " + count + ": " + problem);
        }
        return "received=" + count;
    }

    private static String chain(Throwable t) {
        StringBuilder b = new StringBuilder(String.valueOf(t));
        for (Throwable c = t.getCause(); c != null && c != t; c = c.getCause()) {
            b.append(" <- ").append(c);
        }
        return b.toString();
    }

    private static String endpoint(Peer p) {
        Throwable cause = p.ep.errorFuture().isDone() ? p.ep.errorFuture().cause() : null;
        return "active=" + p.ep.isActive() + " error=" + (cause == null ? "none" : cause.getClass().getSimpleName())
                + " at=" + p.errorAt + " message=" + (cause == null ? "" : cause.getMessage());
    }

    private String counters() {
        StringBuilder out = new StringBuilder();
        worker.counters().snapshot().forEach((k, v) -> out.append(out.isEmpty() ? "" : " ").append(k).append('=')
                .append(v));
        return out.toString();
    }

    private static String leaks() {
        List<String> leaks = LeakLog.reported();
        return "leaks=" + leaks.size() + (leaks.isEmpty() ? "" : " " + leaks.get(0));
    }

    /** Positional words and key=value options of one command. */
    private record Args(String verb, List<String> words) {
        String word(int i) {
            List<String> plain = positional();
            if (i >= plain.size()) {
                throw new IllegalArgumentException(verb + ": argument " + (i + 1) + " missing");
            }
            return plain.get(i);
        }

        String optionalWord(int i, String dflt) {
            List<String> plain = positional();
            return i < plain.size() ? plain.get(i) : dflt;
        }

        int integer(int i) {
            try {
                return Integer.parseInt(word(i));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(verb + ": argument " + (i + 1) + " '" + word(i)
                        + "' is not a number");
            }
        }

        int count(int i) {
            int n = integer(i);
            if (n < 0 || n > MAX_COUNT) {
                throw new IllegalArgumentException(verb + ": count " + n + " outside 0.." + MAX_COUNT);
            }
            return n;
        }

        long option(String key, long dflt) {
            for (String w : words) {
                if (w.startsWith(key + "=")) {
                    try {
                        return Long.parseLong(w.substring(key.length() + 1));
                    } catch (NumberFormatException e) {
                        throw new IllegalArgumentException(verb + ": " + w + " is not a number");
                    }
                }
            }
            return dflt;
        }

        long seconds() {
            return option("timeout", DEFAULT_TIMEOUT_S);
        }

        boolean flag(String name) {
            return words.contains(name);
        }

        private List<String> positional() {
            return words.stream().filter(w -> !w.contains("=") && !w.equals("sync")).toList();
        }
    }

    @Override
    public String toString() {
        return "node " + worker.name() + String.format(Locale.ROOT, " (%x)", worker.uuid());
    }
}
