package io.nucx.wireup;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandler;
import io.netty.util.concurrent.Future;
import io.nucx.Endpoint;
import io.nucx.NucxBootstrap;
import io.nucx.Worker;
import io.nucx.protocol.tag.TagMessage;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Workers a test starts, closed after each test ({@code @RegisterExtension}), and the helpers the in-process tests
 * share: deterministic message content and waiting for a message to arrive unexpected.
 */
final class TestWorkers implements AfterEachCallback {

    private final List<Worker> workers = new ArrayList<>();

    /** Starts a worker with {@code settings} given as name, value pairs (e.g. "TLS", "tcp"). */
    DefaultWorker start(String name, String... settings) throws Exception {
        return start(name, null, settings);
    }

    /** Settings for {@link #start}: NUCX_TLS {@code tls} and, unless "-", more given as "NAME=value;NAME=value". */
    static String[] settings(String tls, String setting) {
        List<String> settings = new ArrayList<>(List.of("TLS", tls));
        if (!setting.equals("-")) {
            for (String pair : setting.split(";")) {
                settings.addAll(List.of(pair.split("=")));
            }
        }
        return settings.toArray(String[]::new);
    }

    /** As {@link #start(String, String...)}, adding {@code endpointHandler} to every endpoint's pipeline. */
    DefaultWorker start(String name, ChannelHandler endpointHandler, String... settings)
            throws Exception {
        NucxBootstrap b = new NucxBootstrap().name(name).endpointHandler(endpointHandler);
        for (int i = 0; i < settings.length; i += 2) {
            b.config(settings[i], settings[i + 1]);
        }
        DefaultWorker w = (DefaultWorker) b.start();
        workers.add(w);
        return w;
    }

    @Override
    public void afterEach(ExtensionContext context) throws Exception {
        for (Worker w : workers) {
            w.close().get(10, TimeUnit.SECONDS);
        }
        workers.clear();
    }

    /**
     * Blocks {@code w}'s loop until the returned latch is counted down (at most 30 s), and returns only once the loop
     * is blocked: frames sent to it from now on stay unread.
     */
    static CountDownLatch holdLoop(Worker w) throws InterruptedException {
        CountDownLatch go = new CountDownLatch(1);
        CountDownLatch held = new CountDownLatch(1);
        w.eventLoop().execute(() -> {
            held.countDown();
            try {
                go.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        assertTrue(held.await(30, TimeUnit.SECONDS), "the loop did not get to the hold");
        return go;
    }

    /** The implementation behind {@code ep}, for tests that look inside. */
    static EndpointChannel impl(Endpoint ep) {
        return (EndpointChannel) ep;
    }

    /** Message content derived from {@code seed}; wrapped arrays are not leak-tracked. */
    static ByteBuf pattern(long seed, int length) {
        byte[] b = new byte[length];
        new SplittableRandom(seed).nextBytes(b);
        return Unpooled.wrappedBuffer(b);
    }

    /** {@link #pattern} in a pooled direct buffer: native memory, as RMA and zero-copy protocols need. */
    static ByteBuf directPattern(long seed, int length) {
        ByteBuf heap = pattern(seed, length);
        try {
            return ByteBufAllocator.DEFAULT.directBuffer(Math.max(length, 1)).writeBytes(heap);
        } finally {
            heap.release();
        }
    }

    /** An endpoint pair, a's to b and b's for it (created on demand), after one message a → b. */
    record Pair(Endpoint ab, Endpoint ba) {
    }

    /** a's endpoint to b, once its wireup is done (10 s at most). */
    static Endpoint wiredUp(Worker a, Worker b) throws InterruptedException {
        Endpoint ep = a.connect(b.address());
        assertTrue(ep.wireupFuture().await(10, TimeUnit.SECONDS), "wireup to " + b.name());
        return ep;
    }

    /** Connects a to b and sends one small message, so both sides have their endpoint; returns both. */
    static Pair connected(Worker a, Worker b) throws Exception {
        Endpoint ab = a.connect(b.address());
        Future<TagMessage> first = b.tagRecv(Long.MIN_VALUE, -1L);
        ab.tagSend(Long.MIN_VALUE, pattern(1, 10)).sync();
        first.get(10, TimeUnit.SECONDS).release();
        return new Pair(ab, b.endpoints().iterator().next());
    }

    /** Compares as arrays: under PARANOID leak detection every ByteBuf access records a trace. */
    static void assertPattern(long seed, int length, ByteBuf actual) {
        assertEquals(length, actual.readableBytes(), "length");
        byte[] expected = new byte[length];
        new SplittableRandom(seed).nextBytes(expected);
        byte[] got = new byte[length];
        actual.getBytes(actual.readerIndex(), got);
        int at = Arrays.mismatch(expected, got);
        assertTrue(at < 0, () -> "content of " + length + "-byte message differs at byte " + at);
    }

    /**
     * Waits at most {@code seconds} for {@code receive}, checks its content is {@link #pattern pattern(seed, length)}
     * and releases it.
     */
    static void assertReceived(Future<TagMessage> receive, long seed,
                               int length, int seconds) throws Exception {
        TagMessage m = receive.get(seconds, TimeUnit.SECONDS);
        try {
            assertPattern(seed, length, m.content());
        } finally {
            m.release();
        }
    }

    /** Waits (bounded) until {@code w} holds a message nobody has received yet. */
    static void awaitUnexpected(Worker w) throws Exception {
        awaitOnLoop(w, () -> w.unexpectedCount() > 0, "no message arrived");
    }

    /** Waits (30 s at most) until {@code condition}, asked on {@code w}'s loop, holds; fails saying {@code what}. */
    static void awaitOnLoop(Worker w, Callable<Boolean> condition, String what)
            throws Exception {
        awaitTrue(() -> {
            try {
                return w.eventLoop().submit(condition).get();
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }, what);
    }

    /** Waits (30 s at most) until {@code condition} holds; fails saying {@code what}. */
    static void awaitTrue(BooleanSupplier condition, String what) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!condition.getAsBoolean()) {
            assertTrue(System.nanoTime() < deadline, what);
            Thread.sleep(5);
        }
    }

    /**
     * Waits until both sides of {@code ab} (its peer on {@code b}) have {@code lanes} lanes up; returns the peer's
     * endpoint. {@code what} prefixes a failure's message.
     */
    static Endpoint awaitLanes(DefaultWorker b, Endpoint ab, int lanes, String what) throws Exception {
        assertTrue(ab.wireupFuture().await(10, TimeUnit.SECONDS), what + "wireup");
        ab.wireupFuture().sync(); // a wireup that failed says why
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (true) {
            long remoteId = ab.eventLoop().submit(() -> (Long) impl(ab).remoteEndpointId()).get();
            Endpoint ba = b.eventLoop().submit(() -> (Endpoint) b.endpoint(remoteId)).get();
            if (ab.eventLoop().submit(() -> allLanesUp(ab, lanes)).get()
                    && ba != null && b.eventLoop().submit(() -> allLanesUp(ba, lanes)).get()) {
                return ba;
            }
            assertTrue(System.nanoTime() < deadline, what + "lanes did not come up");
            Thread.sleep(5);
        }
    }

    /** Whether {@code ep} has exactly {@code lanes} lanes, all live (on its loop). */
    private static boolean allLanesUp(Endpoint ep, int lanes) {
        EndpointLanes l = impl(ep).lanes();
        if (l.size() != lanes) {
            return false;
        }
        for (int i = 0; i < lanes; i++) {
            if (!l.lane(i).live()) {
                return false;
            }
        }
        return true;
    }
}
