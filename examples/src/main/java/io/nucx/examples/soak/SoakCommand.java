package io.nucx.examples.soak;

import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufAllocatorMetricProvider;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.util.ResourceLeakDetector;
import io.netty.util.concurrent.Future;
import io.nucx.NucxBootstrap;
import io.nucx.Worker;
import io.nucx.protocol.amo.RemoteMemoryKey;
import io.nucx.protocol.tag.TagMessage;
import io.nucx.transport.diag.LeakLog;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * {@code nucx soak --minutes M --endpoints N}: a hub worker in this process and peer processes ({@link SoakPeer})
 * that keep N endpoints to it in all and send without pause: mixed sizes (every protocol the table picks between 0 B
 * and 4 MiB: short, bcopy, multi-fragment, rendezvous; synchronous sends; atomics on a region of the hub), endpoints
 * closed and opened while traffic runs, and every {@code --kill-every} seconds a peer process killed (SIGKILL) and a
 * new one started. The hub checks every message: intact (its bytes follow from its tag); a peer that stops cleanly at
 * the end must have had exactly as many messages received as it sent (none lost, none twice). What a killed peer had
 * in flight is lost with it, and only its messages' integrity is checked. Heap (after GC) and Netty's direct memory
 * are measured after warm-up and at the end, with the peers gone and the hub quiet: both must be back within 5 %
 * (plus 4 MiB for what a JVM moves anyway), with zero leak reports at PARANOID in the hub and in every peer that
 * stopped cleanly. Exit status 0 only then.
 */
@Command(name = "soak", mixinStandardHelpOptions = true,
        description = "Long run against peer processes that churn endpoints and are killed and restarted; checks "
                + "every message, memory back to its warm-up level and zero leak reports.")
public final class SoakCommand implements Callable<Integer> {

    @Option(names = "--minutes", defaultValue = "10", description = "How long traffic runs (decimals allowed).")
    double minutes;

    @Option(names = "--endpoints", defaultValue = "1000", description = "Endpoints the peers keep to the hub.")
    int endpoints;

    @Option(names = "--peers", defaultValue = "4", description = "Peer processes at once.")
    int peers;

    @Option(names = "--kill-every", defaultValue = "20", description = "Seconds between two peer kills.")
    double killEvery;

    @Option(names = "--warmup-seconds", defaultValue = "20", description = "Traffic before the memory baseline.")
    double warmupSeconds;

    /** Which of Netty's allocators the hub runs with, and so what its direct-memory figure counts. */
    enum Allocator { pooled, unpooled }

    @Option(names = "--allocator", defaultValue = "pooled", description = "The hub's buffer allocator: pooled "
            + "(Netty's default, adaptive; its direct memory counts the chunks the pool keeps for reuse, which grow "
            + "to its high-water mark) or unpooled (direct memory counts exactly the buffers alive: the strict leak "
            + "check).")
    Allocator allocator;

    private final Map<Integer, AtomicLong> received = new ConcurrentHashMap<>();
    private final AtomicReference<String> broken = new AtomicReference<>();
    private final AtomicLong bytes = new AtomicLong();

    /** A running peer process and its id. */
    private record Peer(int id, Process process, PrintWriter stdin, BufferedReader stdout) {
    }

    @Override
    public Integer call() throws Exception {
        // Read once, when Netty's buffer classes initialise: before the first buffer, as the leak watch. Pooled is
        // Netty's default (the adaptive allocator in 4.2), left as it is.
        if (allocator == Allocator.unpooled) {
            System.setProperty("io.netty.allocator.type", "unpooled");
        }
        if ((allocator == Allocator.unpooled) != (ByteBufAllocator.DEFAULT instanceof UnpooledByteBufAllocator)) {
            throw new IllegalStateException("--allocator " + allocator + " asked, but Netty's buffer classes were "
                    + "initialised before with " + ByteBufAllocator.DEFAULT.getClass().getSimpleName());
        }
        ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.PARANOID);
        LeakLog.install();
        Worker hub = new NucxBootstrap().name("soak-hub").start();
        Arena arena = Arena.ofShared();
        MemorySegment words = arena.allocate(64, 8);
        RemoteMemoryKey key = hub.registerMemory(words);
        for (int i = 0; i < 256; i++) {
            receive(hub);
        }
        List<Peer> live = new ArrayList<>();
        int nextPeer = 1;
        int perPeer = Math.max(1, endpoints / peers);
        for (int i = 0; i < peers; i++) {
            live.add(start(hub, key, nextPeer++, perPeer));
        }
        long start = System.nanoTime();
        long end = start + (long) (minutes * 60e9);
        long warm = start + (long) (warmupSeconds * 1e9);
        long nextKill = start + (long) (killEvery * 1e9);
        long[] baseline = null;
        SplittableRandom random = new SplittableRandom(7);
        int kills = 0;
        while (System.nanoTime() < end && broken.get() == null) {
            Thread.sleep(200);
            long now = System.nanoTime();
            if (baseline == null && now >= warm) {
                baseline = memory();
                System.out.printf(Locale.ROOT, "warm: heap %.1f MiB, direct %.1f MiB, %d messages so far%n",
                        baseline[0] / 1048576.0, baseline[1] / 1048576.0, total());
            }
            if (now >= nextKill) {
                nextKill = now + (long) (killEvery * 1e9);
                Peer victim = live.remove(random.nextInt(live.size()));
                victim.process().destroyForcibly().waitFor(30, TimeUnit.SECONDS);
                kills++;
                live.add(start(hub, key, nextPeer++, perPeer));
            }
        }
        // The end: live peers stop cleanly and report what they sent; every one of those must have arrived.
        Map<Integer, Long> sent = new HashMap<>();
        int peerLeaks = 0;
        for (Peer p : live) {
            p.stdin().println("stop");
            p.stdin().flush();
        }
        for (Peer p : live) {
            for (String l; (l = p.stdout().readLine()) != null; ) {
                if (l.startsWith("FINAL ")) {
                    String[] f = l.split(" ");
                    sent.put(p.id(), Long.parseLong(f[1]));
                    peerLeaks += Integer.parseInt(f[3]);
                    break;
                }
                if (l.startsWith("FAILED")) {
                    broken.compareAndSet(null, "peer " + p.id() + ": " + l);
                }
            }
            p.process().waitFor(60, TimeUnit.SECONDS);
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        for (Map.Entry<Integer, Long> e : sent.entrySet()) {
            while (count(e.getKey()) < e.getValue() && System.nanoTime() < deadline && broken.get() == null) {
                Thread.sleep(50);
            }
        }
        // Quiet: the hub's endpoints to the peers end (keepalive for the killed ones), then memory settles.
        long quiet = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!hub.endpoints().isEmpty() && System.nanoTime() < quiet) {
            Thread.sleep(100);
        }
        long[] after = memory();
        List<String> leaks = LeakLog.reported();
        List<String> failures = new ArrayList<>();
        if (broken.get() != null) {
            failures.add(broken.get());
        }
        for (Map.Entry<Integer, Long> e : sent.entrySet()) {
            if (count(e.getKey()) != e.getValue()) {
                failures.add("peer " + e.getKey() + " sent " + e.getValue() + " messages, the hub received "
                        + count(e.getKey()));
            }
        }
        if (sent.size() != live.size()) {
            failures.add((live.size() - sent.size()) + " peers did not stop cleanly");
        }
        if (!hub.endpoints().isEmpty()) {
            failures.add(hub.endpoints().size() + " hub endpoints outlived their peers");
        }
        if (baseline == null) {
            failures.add("the run ended before the warm-up did");
        } else {
            for (int i = 0; i < 2; i++) {
                long allowed = baseline[i] + baseline[i] / 20 + (4 << 20);
                if (after[i] > allowed) {
                    failures.add((i == 0 ? "heap" : "direct memory") + " did not come back: " + after[i]
                            + " bytes after, " + baseline[i] + " after warm-up");
                }
            }
        }
        if (!leaks.isEmpty()) {
            failures.add(leaks.size() + " leak reports: " + leaks.get(0));
        }
        if (peerLeaks > 0) {
            failures.add(peerLeaks + " leak reports in the peers that stopped cleanly (their standard error has them)");
        }
        System.out.printf(Locale.ROOT, "soak: %.1f min, %d endpoints over %d peers at once, %d peers killed, "
                        + "%d messages (%.1f MiB) received and checked; heap %.1f -> %.1f MiB, direct (%s) %.1f -> "
                        + "%.1f MiB, %d leak reports (hub), %d (peers that stopped cleanly)%n",
                (System.nanoTime() - start) / 60e9, perPeer * peers, peers, kills,
                total(), bytes.get() / 1048576.0, baseline == null ? 0 : baseline[0] / 1048576.0,
                after[0] / 1048576.0, allocator, baseline == null ? 0 : baseline[1] / 1048576.0, after[1] / 1048576.0,
                leaks.size(), peerLeaks);
        hub.unregisterMemory(key);
        hub.close().get(30, TimeUnit.SECONDS);
        arena.close();
        if (!failures.isEmpty()) {
            failures.forEach(f -> System.out.println("FAIL " + f));
            return 1;
        }
        System.out.println("PASS");
        return 0;
    }

    /** One wildcard receive, posted again when it completes: the hub takes whatever comes. */
    private void receive(Worker hub) {
        Future<TagMessage> f = hub.tagRecv(0, 0);
        f.addListener(done -> {
            if (!done.isSuccess()) {
                return; // the hub is closing
            }
            TagMessage m = (TagMessage) done.getNow();
            try {
                check(m);
            } finally {
                m.release();
            }
            receive(hub);
        });
    }

    private void check(TagMessage m) {
        long tag = m.tag();
        byte[] expected = SoakPayload.bytes(tag);
        byte[] got = new byte[m.content().readableBytes()];
        m.content().getBytes(m.content().readerIndex(), got);
        if (!Arrays.equals(expected, got)) {
            broken.compareAndSet(null, "message " + Long.toHexString(tag) + " arrived damaged (" + got.length
                    + " bytes, " + expected.length + " sent)");
        }
        int peer = SoakPayload.peer(tag);
        received.computeIfAbsent(peer, p -> new AtomicLong()).incrementAndGet();
        bytes.addAndGet(got.length);
    }

    private long count(int peer) {
        AtomicLong n = received.get(peer);
        return n == null ? 0 : n.get();
    }

    private long total() {
        return received.values().stream().mapToLong(AtomicLong::get).sum();
    }

    private static Peer start(Worker hub, RemoteMemoryKey key, int id, int endpoints) throws Exception {
        String java = ProcessHandle.current().info().command().orElseThrow();
        List<String> cmd = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED", "-cp",
                System.getProperty("java.class.path"), SoakPeer.class.getName(), hub.address().toHex(), key.toHex(),
                Integer.toString(id), Integer.toString(endpoints)));
        Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        PrintWriter in = new PrintWriter(p.getOutputStream(), true, StandardCharsets.UTF_8);
        for (String l; (l = out.readLine()) != null; ) {
            if (l.startsWith("READY")) {
                return new Peer(id, p, in, out);
            }
        }
        throw new IllegalStateException("soak peer " + id + " exited before it was ready (exit " + p.waitFor() + ")");
    }

    /** {heap used after GC, Netty's direct memory}. */
    private static long[] memory() throws InterruptedException {
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(200);
        }
        Runtime rt = Runtime.getRuntime();
        long heap = rt.totalMemory() - rt.freeMemory();
        long direct = ((ByteBufAllocatorMetricProvider) ByteBufAllocator.DEFAULT).metric().usedDirectMemory();
        return new long[] {heap, direct};
    }
}
