package io.nucx.examples.frameworks;

import io.grpc.ManagedChannel;
import io.grpc.stub.StreamObserver;
import io.netty.channel.EventLoopGroup;
import org.HdrHistogram.Histogram;
import reactor.core.publisher.Flux;
import reactor.netty.http.client.HttpClient;
import reactor.netty.resources.LoopResources;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The client side of a framework benchmark, against a {@link FrameworkServer} in another process:
 * <pre>
 * FrameworkBench http|reactor|grpc nucx|tcp PORT lat|bw SIZE ITERATIONS WARMUP
 * </pre>
 * {@code lat}: one request at a time, a SIZE-byte body each way; prints the round trip's median, 99th percentile and
 * mean (microseconds) and requests per second. {@code bw}: {@value #WINDOW} requests in flight with SIZE-byte bodies
 * and 16-byte answers, which the server does not hash (its hash would cost more than the transport); prints MB/s (MiB
 * of request bodies per second) and requests per second. Latency answers are checked by the server's hash,
 * throughput answers by the length it got; a wrong one stops the run. One line: {@code RESULT ...}.
 */
public final class FrameworkBench {

    static final int WINDOW = 8;

    private FrameworkBench() {
    }

    public static void main(String[] args) throws Exception {
        String framework = args[0];
        Stack stack = Stack.parse(args[1]);
        InetSocketAddress to = new InetSocketAddress("127.0.0.1", Integer.parseInt(args[2]));
        boolean lat = args[3].equals("lat");
        int size = Integer.parseInt(args[4]);
        int iterations = Integer.parseInt(args[5]);
        int warmup = Integer.parseInt(args[6]);
        byte[] body = Bodies.of(1, size);
        String sha = Bodies.sha256(body);
        Runner r = switch (framework) {
            case "http" -> new HttpRunner(stack, to);
            case "reactor" -> new ReactorRunner(stack, to);
            case "grpc" -> new GrpcRunner(stack, to);
            default -> throw new IllegalArgumentException(framework);
        };
        try {
            String result;
            if (lat) {
                Histogram h = new Histogram(3);
                for (int i = 0; i < warmup + iterations; i++) {
                    long t0 = System.nanoTime();
                    r.roundTrip(body, sha, size);
                    if (i >= warmup) {
                        h.recordValue((System.nanoTime() - t0) / 1000);
                    }
                }
                result = String.format(Locale.ROOT, "p50=%d us p99=%d us mean=%.1f us rate=%.0f req/s",
                        h.getValueAtPercentile(50), h.getValueAtPercentile(99), h.getMean(), 1e6 / h.getMean());
            } else {
                r.stream(body, sha, warmup);
                long t0 = System.nanoTime();
                r.stream(body, sha, iterations);
                double s = (System.nanoTime() - t0) / 1e9;
                result = String.format(Locale.ROOT, "MBps=%.1f rate=%.0f req/s", (double) size * iterations / s
                        / (1 << 20), iterations / s);
            }
            System.out.println("RESULT " + framework + " " + args[1] + " " + args[3] + " " + size + " " + result);
        } finally {
            r.close();
        }
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
            Flux.range(0, count).flatMap(i -> reactor.core.publisher.Mono.fromCallable(() ->
                            ReactorApp.post(client, body, 16, 2, false, Duration.ofSeconds(30)))
                    .subscribeOn(reactor.core.scheduler.Schedulers.boundedElastic()), WINDOW)
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
            java.util.concurrent.CountDownLatch done = new java.util.concurrent.CountDownLatch(1);
            StreamObserver<byte[]> out = GrpcApp.sizes(channel, new StreamObserver<>() {
                @Override
                public void onNext(byte[] a) {
                    if (a.length != 4 || java.nio.ByteBuffer.wrap(a).getInt() != body.length) {
                        failed.set(new IllegalStateException("wrong answer: " + java.util.Arrays.toString(a)));
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
