package io.nucx.examples.frameworks;

import io.grpc.ManagedChannel;
import io.grpc.stub.StreamObserver;
import io.netty.channel.EventLoopGroup;
import org.HdrHistogram.Histogram;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.netty.http.client.HttpClient;
import reactor.netty.resources.LoopResources;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The client side of a framework benchmark, against a {@link FrameworkServer} in another process:
 * <pre>
 * FrameworkBench http|reactor|grpc nucx|tcp PORT lat|bw SIZE ITERATIONS WARMUP
 * </pre>
 * WARMUP is a count of requests or a time ({@code 20s}) before the measured ones.
 * {@code lat}: one request at a time, a SIZE-byte body each way; prints the round trip's median, 99th percentile and
 * mean (microseconds) and requests per second. {@code bw}: {@value #WINDOW} requests in flight with SIZE-byte bodies
 * and 16-byte answers, which the server does not hash (its hash would cost more than the transport); prints MB/s (MiB
 * of request bodies per second) and requests per second. Latency answers are checked by the server's hash,
 * throughput answers by the length it got; a wrong one stops the run. One line: {@code RESULT ...}.
 *
 * <p>Several stacks and as many ports ({@code tcp,nucx P1,P2}, against one {@link FrameworkServer} serving those
 * stacks) run in turns: a line for each stack and one for each stack's ratios to the first's, turn by turn.
 */
public final class FrameworkBench {

    static final int WINDOW = 8;
    /** Turns each stack takes when several run in turns. */
    static final int TURNS = 40;

    private FrameworkBench() {
    }

    public static void main(String[] args) throws Exception {
        String framework = args[0];
        String[] stacks = args[1].split(",");
        String[] ports = args[2].split(",");
        if (stacks.length != ports.length) {
            throw new IllegalArgumentException("stacks '" + args[1] + "' and ports '" + args[2]
                    + "' differ in number: one port a stack");
        }
        boolean lat = args[3].equals("lat");
        int size = Integer.parseInt(args[4]);
        int iterations = Integer.parseInt(args[5]);
        Warmup warmup = Warmup.parse(args[6]);
        int turn = Math.max(1, iterations / TURNS); // a turn's requests; the warm-up goes in chunks of as many
        byte[] body = Bodies.of(1, size);
        String sha = Bodies.sha256(body);
        Runner[] runners = new Runner[stacks.length];
        try {
            for (int i = 0; i < stacks.length; i++) {
                runners[i] = runner(framework, Stack.parse(stacks[i]),
                        new InetSocketAddress("127.0.0.1", Integer.parseInt(ports[i])));
            }
            String head = framework + " %s " + args[3] + " " + size + " ";
            if (runners.length == 1) {
                Runner r = runners[0];
                String result;
                if (lat) {
                    Histogram h = new Histogram(3);
                    warmup.run(turn, count -> roundTrips(r, body, sha, count, null, null));
                    roundTrips(r, body, sha, iterations, h, null);
                    result = latency(h);
                } else {
                    warmup.run(turn, count -> r.stream(body, sha, count));
                    long t0 = System.nanoTime();
                    r.stream(body, sha, iterations);
                    result = throughput(size, iterations, System.nanoTime() - t0);
                }
                System.out.println("RESULT " + String.format(Locale.ROOT, head, args[1]) + result);
            } else {
                inTurns(runners, stacks, head, lat, body, sha, iterations, turn, warmup);
            }
        } finally {
            for (Runner r : runners) {
                if (r != null) {
                    r.close();
                }
            }
        }
    }

    private static Runner runner(String framework, Stack stack, InetSocketAddress to) throws Exception {
        return switch (framework) {
            case "http" -> new HttpRunner(stack, to);
            case "reactor" -> new ReactorRunner(stack, to);
            case "grpc" -> new GrpcRunner(stack, to);
            default -> throw new IllegalArgumentException("framework '" + framework + "': http, reactor or grpc");
        };
    }

    /**
     * The warm-up: a count of requests, or a time ({@code 20s}) for which requests go on, in chunks; a JVM's JIT
     * compiler takes seconds to settle the apps' paths, on both sides (64 KiB bodies over HTTP kept speeding up for
     * 10 s), and a count that warms one framework leaves another cold.
     */
    record Warmup(int count, long nanos) {

        static Warmup parse(String text) {
            try {
                if (text.endsWith("s")) {
                    long seconds = Long.parseLong(text.substring(0, text.length() - 1));
                    if (seconds >= 0) {
                        return new Warmup(0, TimeUnit.SECONDS.toNanos(seconds));
                    }
                } else if (Integer.parseInt(text) >= 0) {
                    return new Warmup(Integer.parseInt(text), 0);
                }
            } catch (NumberFormatException e) {
                // named below
            }
            throw new IllegalArgumentException("warm-up '" + text + "': a count of requests (1000) or seconds (20s)");
        }

        /** Runs {@code chunk} with {@code size} requests until the count is done or the time has passed. */
        void run(int size, Chunk chunk) throws Exception {
            for (int done = 0; done < count; done += size) {
                chunk.run(size);
            }
            long end = System.nanoTime() + nanos;
            while (nanos > 0 && System.nanoTime() - end < 0) {
                chunk.run(size);
            }
        }
    }

    @FunctionalInterface
    interface Chunk {
        void run(int count) throws Exception;
    }

    /** {@code count} round trips, each recorded (microseconds) in {@code all} and {@code turn} where given. */
    private static void roundTrips(Runner r, byte[] body, String sha, int count, Histogram all, Histogram turn)
            throws Exception {
        for (int i = 0; i < count; i++) {
            long t0 = System.nanoTime();
            r.roundTrip(body, sha, body.length);
            long us = (System.nanoTime() - t0) / 1000;
            if (all != null) {
                all.recordValue(us);
            }
            if (turn != null) {
                turn.recordValue(us);
            }
        }
    }

    private static String latency(Histogram h) {
        return String.format(Locale.ROOT, "p50=%d us p99=%d us mean=%.1f us rate=%.0f req/s",
                h.getValueAtPercentile(50), h.getValueAtPercentile(99), h.getMean(), 1e6 / h.getMean());
    }

    private static String throughput(int size, long requests, long nanos) {
        return String.format(Locale.ROOT, "MBps=%.1f rate=%.0f req/s", mibPerSecond((long) size * requests, nanos),
                requests / (nanos / 1e9));
    }

    private static double mibPerSecond(long bytes, long nanos) {
        return bytes / (nanos / 1e9) / (1 << 20);
    }

    /**
     * The stacks in turns of a {@value #TURNS}th of the iterations each, the order within a turn reversed every
     * turn, warm-up included (turns of the same size, not recorded): this machine changes speed within seconds, so
     * stacks run one after the other compare different machines, as bench/interleave.py says for perftest. Idle, a
     * stack's loops park (nucx's after its spin time), so the one whose turn it is has the cores. Prints each stack's
     * figures over all its turns and, for each stack after the first, the ratios to the first's of the same turn:
     * their median and quartiles (a turn's p99 is over a few hundred requests at least, with 100,000 iterations).
     */
    private static void inTurns(Runner[] runners, String[] stacks, String head, boolean lat, byte[] body,
                                String sha, int iterations, int turn, Warmup warmup) throws Exception {
        int n = runners.length;
        int turns = (iterations + turn - 1) / turn;
        Histogram[] all = new Histogram[n];
        long[] nanos = new long[n];
        long[] requests = new long[n];
        double[][] p50 = new double[n][turns];
        double[][] p99 = new double[n][turns];
        double[][] mean = new double[n][turns];
        double[][] mbps = new double[n][turns];
        Histogram one = new Histogram(3);
        for (int i = 0; i < n; i++) {
            all[i] = new Histogram(3);
        }
        int[] warmTurn = {0};
        warmup.run(turn, count -> {
            int t = warmTurn[0]++;
            for (int k = 0; k < n; k++) {
                Runner r = runners[(t & 1) == 0 ? k : n - 1 - k];
                if (lat) {
                    roundTrips(r, body, sha, count, null, null);
                } else {
                    r.stream(body, sha, count);
                }
            }
        });
        for (int t = 0; t < turns; t++) {
            int count = Math.min(turn, iterations - t * turn);
            for (int k = 0; k < n; k++) {
                int i = (t & 1) == 0 ? k : n - 1 - k;
                if (lat) {
                    one.reset();
                    roundTrips(runners[i], body, sha, count, all[i], one);
                    p50[i][t] = one.getValueAtPercentile(50);
                    p99[i][t] = one.getValueAtPercentile(99);
                    mean[i][t] = one.getMean();
                } else {
                    long t0 = System.nanoTime();
                    runners[i].stream(body, sha, count);
                    long took = System.nanoTime() - t0;
                    nanos[i] += took;
                    requests[i] += count;
                    mbps[i][t] = mibPerSecond((long) body.length * count, took);
                }
            }
        }
        for (int i = 0; i < n; i++) {
            System.out.println("RESULT " + String.format(Locale.ROOT, head, stacks[i])
                    + (lat ? latency(all[i]) : throughput(body.length, requests[i], nanos[i]))
                    + " in " + turns + " turns with " + String.join(",", stacks));
        }
        for (int i = 1; i < n; i++) {
            String ratio = stacks[i] + "/" + stacks[0];
            System.out.println("RESULT " + String.format(Locale.ROOT, head, ratio) + (lat
                    ? "p50 " + ratios(p50[i], p50[0]) + " p99 " + ratios(p99[i], p99[0]) + " mean "
                    + ratios(mean[i], mean[0]) : "MBps " + ratios(mbps[i], mbps[0]))
                    + " (turn by turn: median (quartiles))");
        }
    }

    /** The ratios {@code a[t] / b[t]}: median (lower quartile, upper quartile). */
    private static String ratios(double[] a, double[] b) {
        double[] r = new double[a.length];
        for (int t = 0; t < a.length; t++) {
            r[t] = a[t] / b[t];
        }
        Arrays.sort(r);
        return String.format(Locale.ROOT, "%.3f (%.3f, %.3f)", quantile(r, 0.5), quantile(r, 0.25),
                quantile(r, 0.75));
    }

    /** The {@code q} quantile of sorted {@code r}, interpolated between neighbours. */
    private static double quantile(double[] r, double q) {
        double at = q * (r.length - 1);
        int lo = (int) Math.floor(at);
        int hi = Math.min(r.length - 1, lo + 1);
        return r[lo] + (r[hi] - r[lo]) * (at - lo);
    }

    private static void check(HttpApp.Answered a, String sha, int size) {
        if (a.status() != 200 || !(sha == null || sha.equals(a.requestSha256())) || a.requestLength() != size) {
            throw new IllegalStateException("wrong answer: " + a);
        }
    }

    private interface Runner extends AutoCloseable {
        void roundTrip(byte[] body, String sha, int answerSize) throws Exception;

        void stream(byte[] body, String sha, int count) throws Exception;
    }

    private static final class HttpRunner implements Runner {
        final EventLoopGroup group;
        final HttpApp.Client client;

        HttpRunner(Stack stack, InetSocketAddress to) throws InterruptedException {
            group = stack.newGroup(1);
            client = HttpApp.Client.connect(group, stack.channel(), to);
        }

        @Override
        public void roundTrip(byte[] body, String sha, int answerSize) throws Exception {
            client.write(body, answerSize, 2);
            client.flush();
            check(client.next(30, TimeUnit.SECONDS), sha, body.length);
        }

        @Override
        public void stream(byte[] body, String sha, int count) throws Exception {
            int sent = 0;
            for (; sent < Math.min(WINDOW, count); sent++) {
                client.write(body, 16, 2, false);
            }
            client.flush();
            for (int done = 0; done < count; done++) {
                check(client.next(30, TimeUnit.SECONDS), null, body.length);
                if (sent < count) {
                    client.write(body, 16, 2, false);
                    client.flush();
                    sent++;
                }
            }
        }

        @Override
        public void close() throws Exception {
            client.close();
            group.shutdownGracefully(0, 5, TimeUnit.SECONDS).sync();
        }
    }

    private static final class ReactorRunner implements Runner {
        final LoopResources loops;
        final HttpClient client;

        ReactorRunner(Stack stack, InetSocketAddress to) {
            loops = stack == Stack.NUCX ? new NucxLoopResources(1) : ReactorApp.tcpLoops(1);
            client = ReactorApp.client(loops, to);
        }

        @Override
        public void roundTrip(byte[] body, String sha, int answerSize) {
            check(ReactorApp.post(client, body, answerSize, 2, Duration.ofSeconds(30)), sha, body.length);
        }

        @Override
        public void stream(byte[] body, String sha, int count) {
            Flux.range(0, count).flatMap(i -> Mono.fromCallable(() ->
                            ReactorApp.post(client, body, 16, 2, false, Duration.ofSeconds(30)))
                    .subscribeOn(Schedulers.boundedElastic()), WINDOW)
                    .doOnNext(a -> check(a, null, body.length)).blockLast(Duration.ofMinutes(5));
        }

        @Override
        public void close() {
            loops.disposeLater().block(Duration.ofSeconds(10));
        }
    }

    private static final class GrpcRunner implements Runner {
        final EventLoopGroup group;
        final ManagedChannel channel;

        GrpcRunner(Stack stack, InetSocketAddress to) {
            group = stack.newGroup(1);
            channel = GrpcApp.client(group, stack.channel(), to);
        }

        @Override
        public void roundTrip(byte[] body, String sha, int answerSize) {
            byte[] a = GrpcApp.unary(channel, body);
            if (a.length != 32 + body.length) {
                throw new IllegalStateException("wrong answer length " + a.length);
            }
        }

        @Override
        public void stream(byte[] body, String sha, int count) throws Exception {
            Semaphore window = new Semaphore(WINDOW);
            AtomicReference<Throwable> failed = new AtomicReference<>();
            CountDownLatch done = new CountDownLatch(1);
            StreamObserver<byte[]> out = GrpcApp.sizes(channel, new StreamObserver<>() {
                @Override
                public void onNext(byte[] a) {
                    if (a.length != 4 || ByteBuffer.wrap(a).getInt() != body.length) {
                        failed.set(new IllegalStateException("wrong answer: " + Arrays.toString(a)));
                    }
                    window.release();
                }

                @Override
                public void onError(Throwable t) {
                    failed.set(t);
                    done.countDown();
                }

                @Override
                public void onCompleted() {
                    done.countDown();
                }
            });
            for (int i = 0; i < count; i++) {
                if (!window.tryAcquire(30, TimeUnit.SECONDS) || failed.get() != null) {
                    throw new IllegalStateException("stream stalled or failed", failed.get());
                }
                out.onNext(body);
            }
            out.onCompleted();
            if (!done.await(60, TimeUnit.SECONDS) || failed.get() != null) {
                throw new IllegalStateException("stream did not complete", failed.get());
            }
        }

        @Override
        public void close() throws Exception {
            channel.shutdown().awaitTermination(10, TimeUnit.SECONDS);
            group.shutdownGracefully(0, 5, TimeUnit.SECONDS).sync();
        }
    }
}
