package io.nucx.wireup;

import io.netty.util.concurrent.Future;
import io.nucx.Endpoint;
import io.nucx.Worker;
import io.nucx.protocol.amo.AtomicOp;
import io.nucx.protocol.amo.RemoteAccessException;
import io.nucx.protocol.amo.RemoteMemoryKey;
import io.nucx.transport.cma.Cma;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Randomized one-sided RMA between real workers (UCX's put/get/flush/fence/atomics). One initiator puts and gets random
 * sizes (0 B to 4 MiB, biased to cma's 512 KiB chunk and 2 MiB turn, the bounce chunk and page edges) at random
 * offsets (the region's first and last byte among them) from native, byte[] and long[] memory (local addresses
 * sometimes page-aliased to the remote ones: cma's bounce path), with fences and flushes between them (a fence
 * before every operation that overlaps an unordered earlier one); a model of the target memory is checked after every
 * flush, with guard bytes around the region, and every get against the model as it was issued. Ranges one past the
 * region's ends are refused. Two initiators run random 64-bit atomics (add, swap, compare-swap, and, or, xor) on a
 * few shared words at once: each word's (previous value, new value) steps must form one chain from its initial to its
 * final value (a lost update or a wrong previous value breaks it). Endpoints and workers closed mid-operation complete
 * every future, and nothing lands after the close completed. Seed: -Dtest.rma.seed=N replays a run.
 */
@Timeout(120)
class RmaRandomTest {

    private static final long SEED = Long.getLong("test.rma.seed", System.nanoTime());
    private static final long BUDGET_NANOS = TimeUnit.MILLISECONDS.toNanos(Long.getLong("test.rma.millis", 2500));
    private static final int REGION = (6 << 20) + 13;
    private static final int GUARD = 4096;
    private static final int POOL = 40 << 20;
    private static final int[] SIZES = {1, 2, 7, 8, 9, 15, 16, 17, 63, 64, 65, 4095, 4096, 4097, 8191, 8192, 8193,
        65535, 65536, 65537, (512 << 10) - 1, 512 << 10, (512 << 10) + 1, (1 << 20) - 1, 1 << 20, (1 << 20) + 1,
        (2 << 20) - 1, 2 << 20, (2 << 20) + 1, (2 << 20) + (512 << 10) + 1, (4 << 20) - 1, 4 << 20};

    @RegisterExtension
    final TestWorkers workers = new TestWorkers();

    private static String ctx(long seed, String what) {
        return "[seed=" + seed + " (-Dtest.rma.seed=" + SEED + ") " + what + "] ";
    }

    private static void assumeCma(String tls) {
        if (tls.contains("cma")) {
            assumeTrue(Cma.availability().isAvailable(), () -> Cma.availability().reason());
        }
    }

    private static int size(SplittableRandom rnd) {
        return switch (rnd.nextInt(6)) {
            case 0 -> 0;
            case 1, 2 -> SIZES[rnd.nextInt(SIZES.length)];
            case 3 -> rnd.nextInt(1, 256);
            case 4 -> rnd.nextInt(1, 64 << 10);
            default -> rnd.nextInt(1, (4 << 20) + 1);
        };
    }

    private static int offset(SplittableRandom rnd, int n) {
        int max = REGION - n;
        return switch (rnd.nextInt(5)) {
            case 0 -> 0;
            case 1 -> max;
            case 2 -> Math.max(0, Math.min(max, SIZES[rnd.nextInt(SIZES.length)] + rnd.nextInt(-2, 3)));
            default -> rnd.nextInt(max + 1);
        };
    }

    /** An operation issued since the last flush, with what it must leave behind. */
    private record Op(int id, String what, Future<Void> future, MemorySegment local, byte[] expected) {
    }

    private record Range(int from, int to, boolean put) {
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"shm,cma", "tcp,cma"})
    void putGetFlushFenceMatchTheModel(String tls) throws Exception {
        assumeCma(tls);
        long seed = SEED ^ tls.hashCode();
        System.out.println("RmaRandomTest put/get " + tls + ": seed " + seed + " (-Dtest.rma.seed=" + SEED + ")");
        SplittableRandom rnd = new SplittableRandom(seed);
        String base = ctx(seed, tls);
        DefaultWorker a = workers.start("a", "TLS", tls);
        DefaultWorker b = workers.start("b", "TLS", tls);
        try (Arena arena = Arena.ofShared()) {
            // the region starts at a random place in a page, with guard bytes around it that nobody may write
            int lead = GUARD + rnd.nextInt(4096);
            MemorySegment whole = arena.allocate(lead + REGION + GUARD, 4096);
            byte[] initial = new byte[REGION];
            rnd.nextBytes(initial);
            whole.fill((byte) 0x5a);
            MemorySegment region = whole.asSlice(lead, REGION);
            region.copyFrom(MemorySegment.ofArray(initial));
            byte[] model = initial.clone();
            RemoteMemoryKey key = RemoteMemoryKey.fromHex(b.registerMemory(region).toHex());
            Endpoint ab = a.connect(b.address());
            assertTrue(ab.wireupFuture().await(10, TimeUnit.SECONDS), base + "wireup");
            assertTrue(ab.rmaLane() != null, base + "no RMA lane: " + ab.describeLanes());
            MemorySegment pool = arena.allocate(POOL, 4096);
            long poolUsed = 0;
            List<Op> ops = new ArrayList<>();
            List<Range> epoch = new ArrayList<>();
            List<String> log = new ArrayList<>();
            List<Future<Void>> fences = new ArrayList<>();
            int id = 0;
            int flushes = 0;
            long end = System.nanoTime() + BUDGET_NANOS;
            while (System.nanoTime() < end || !ops.isEmpty()) {
                int dice = rnd.nextInt(100);
                boolean flush = dice < 8 || System.nanoTime() >= end || ops.size() > 48;
                if (flush) {
                    Future<Void> f = rnd.nextBoolean() ? ab.flushRma() : a.flushRma();
                    String what = base + "flush " + flushes + " after ops " + log;
                    assertTrue(f.await(10, TimeUnit.SECONDS), what + ": flush did not complete");
                    assertNull(f.cause(), what + ": flush failed");
                    check(what, ops, region, whole, lead, model);
                    for (Future<Void> fence : fences) {
                        assertTrue(fence.isSuccess(), what + ": a fence failed: " + fence.cause());
                    }
                    ops.clear();
                    epoch.clear();
                    log.clear();
                    fences.clear();
                    poolUsed = 0;
                    flushes++;
                    continue;
                }
                if (dice < 14) {
                    fences.add(rnd.nextBoolean() ? ab.fenceRma() : a.fenceRma());
                    epoch.clear();
                    log.add("fence");
                    continue;
                }
                boolean put = rnd.nextInt(100) < 60;
                if (dice < 19) { // refused: one past an end of the region, or one before it
                    int n = rnd.nextInt(1, 5000);
                    long at = rnd.nextBoolean() ? key.base() + REGION - n + 1 : key.base() - 1;
                    if (rnd.nextInt(4) == 0) {
                        n = REGION + 1;
                        at = key.base();
                    }
                    MemorySegment local = arena.allocate(n);
                    Future<Void> f = put ? ab.put(local, key, at) : ab.get(local, key, at);
                    String what = base + (put ? "PUT" : "GET") + " of " + n + " at offset " + (at - key.base());
                    assertTrue(f.await(5, TimeUnit.SECONDS), what + " did not complete");
                    assertInstanceOf(IllegalArgumentException.class, f.cause(), what + " was not refused");
                    assertTrue(f.cause().getMessage().contains("outside"), what + ": " + f.cause().getMessage());
                    log.add("refused " + (put ? "PUT" : "GET") + " " + n + "@" + (at - key.base()));
                    continue;
                }
                int n = size(rnd);
                int off = offset(rnd, n);
                if (rnd.nextInt(20) == 0) { // the first or last byte alone
                    n = 1;
                    off = rnd.nextBoolean() ? 0 : REGION - 1;
                }
                // an operation that overlaps an unordered earlier one waits behind a fence (or a flush)
                int from = off;
                int to = off + n;
                boolean conflict = epoch.stream().anyMatch(r -> r.from < to && from < r.to && (put || r.put));
                if (conflict) {
                    fences.add(rnd.nextBoolean() ? ab.fenceRma() : a.fenceRma());
                    epoch.clear();
                    log.add("fence");
                }
                int kind = rnd.nextInt(10);
                MemorySegment local;
                String where;
                if (kind < 6 && poolUsed + n + 8192 <= POOL) {
                    long at = (poolUsed + 4095) & ~4095L;
                    long remote = region.address() + off;
                    long page = (remote - pool.address() - at) & 4095;
                    if (rnd.nextInt(3) == 0) { // page-aliased: 1 to 15 bytes apart modulo a page (cma's bounce)
                        int d = rnd.nextInt(1, 16);
                        page = put ? (remote - d - pool.address() - at) & 4095
                                : (remote + d - pool.address() - at) & 4095;
                    } else if (rnd.nextBoolean()) {
                        page = rnd.nextInt(4096);
                    }
                    local = pool.asSlice(at + page, n);
                    poolUsed = at + page + n;
                    where = "native+" + ((local.address() - remote) & 4095);
                } else if (kind < 9) {
                    int lead2 = rnd.nextInt(16);
                    local = MemorySegment.ofArray(new byte[lead2 + n + rnd.nextInt(16)]).asSlice(lead2, n);
                    where = "byte[]";
                } else {
                    local = MemorySegment.ofArray(new long[(n + 7) / 8 + 1]).asSlice(0, n);
                    where = "long[]";
                }
                String what = (put ? "PUT" : "GET") + "#" + id + " " + n + "@" + off + " " + where;
                byte[] expected;
                Future<Void> f;
                if (put) {
                    byte[] data = new byte[n];
                    rnd.nextBytes(data);
                    MemorySegment.copy(MemorySegment.ofArray(data), 0, local, 0, n);
                    System.arraycopy(data, 0, model, off, n);
                    expected = data;
                    f = ab.put(local, key, key.base() + off);
                } else {
                    expected = Arrays.copyOfRange(model, off, off + n);
                    local.fill((byte) 0xee);
                    f = ab.get(local, key, key.base() + off);
                }
                ops.add(new Op(id++, what, f, local, expected));
                epoch.add(new Range(from, to, put));
                log.add(what);
                if (rnd.nextInt(10) == 0) { // sometimes wait for it alone: done means done
                    String w = base + what;
                    assertTrue(f.await(10, TimeUnit.SECONDS), w + " did not complete");
                    assertNull(f.cause(), w + " failed");
                    if (put) {
                        assertRange(w + ": put complete, bytes not at the target", expected, region, off);
                    } else {
                        assertBytes(w + ": get complete", expected, local);
                    }
                }
            }
            System.out.println(base + id + " operations, " + flushes + " flushes");
            assertTrue(flushes > 3, base + "only " + flushes + " flushes");
            // the key withdrawn: atomics the owner serves refuse it
            b.unregisterMemory(key);
            Future<Long> gone = ab.atomic(AtomicOp.ADD, key, (key.base() + 7) & ~7L, 1);
            assertTrue(gone.await(10, TimeUnit.SECONDS), base + "atomic after unregister");
            assertInstanceOf(RemoteAccessException.class, gone.cause(), base + "atomic after unregister");
            check(base + "after unregister", List.of(), region, whole, lead, model);
            ab.close().sync();
        }
    }

    /** Every op done and successful, gets got what the model held, the region matches the model, guards intact. */
    private static void check(String what, List<Op> ops, MemorySegment region, MemorySegment whole, int lead,
                              byte[] model) {
        for (Op op : ops) {
            assertTrue(op.future.isDone(), what + ": " + op.what + " not done after the flush");
            assertNull(op.future.cause(), what + ": " + op.what + " failed");
            if (op.what.startsWith("GET")) {
                assertBytes(what + ": " + op.what + " read", op.expected, op.local);
            }
        }
        byte[] now = region.toArray(ValueLayout.JAVA_BYTE);
        int at = Arrays.mismatch(model, now);
        if (at >= 0) {
            int last = at;
            while (last + 1 < model.length && model[last + 1] != now[last + 1]) {
                last++;
            }
            fail(what + ": target differs from the model at offset " + at + " (through " + last + " at least): "
                    + "expected " + model[at] + ", found " + now[at]);
        }
        for (long i = 0; i < whole.byteSize(); i++) {
            if (i == lead) {
                i += REGION - 1;
                continue;
            }
            assertEquals((byte) 0x5a, whole.get(ValueLayout.JAVA_BYTE, i), what + ": guard byte at "
                    + (i - lead) + " relative to the region written");
        }
    }

    private static void assertRange(String what, byte[] expected, MemorySegment region, int off) {
        assertBytes(what, expected, region.asSlice(off, expected.length));
    }

    private static void assertBytes(String what, byte[] expected, MemorySegment actual) {
        byte[] got = actual.toArray(ValueLayout.JAVA_BYTE);
        int at = Arrays.mismatch(expected, got);
        assertEquals(-1, at, () -> what + ": first wrong byte at " + at + " of " + expected.length);
    }

    // ---------------------------------------------------------------------------------------------------------------

    private static final int WORDS = 6;

    /** One atomic as issued, with its outcome. */
    private record Amo(AtomicOp op, int word, long value, long compare, Future<Long> result) {
        long applied(long old) {
            return switch (op) {
                case ADD -> old + value;
                case SWAP -> value;
                case CSWAP -> old == compare ? value : old;
                case AND -> old & value;
                case OR -> old | value;
                case XOR -> old ^ value;
            };
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"tcp", "shm", "tcp,cma"})
    void atomicsFromTwoInitiatorsFormOneChainPerWord(String tls) throws Exception {
        assumeCma(tls);
        long seed = SEED ^ tls.hashCode() ^ 0x5DEECE66DL;
        System.out.println("RmaRandomTest atomics " + tls + ": seed " + seed + " (-Dtest.rma.seed=" + SEED + ")");
        String base = ctx(seed, "atomics " + tls);
        DefaultWorker owner = workers.start("owner", "TLS", tls, "KEEPALIVE_TIMEOUT", "30s");
        DefaultWorker[] init = {workers.start("a", "TLS", tls, "KEEPALIVE_TIMEOUT", "30s"),
            workers.start("b", "TLS", tls, "KEEPALIVE_TIMEOUT", "30s")};
        try (Arena arena = Arena.ofShared()) {
            MemorySegment guarded = arena.allocate(8L * (WORDS + 2), 8);
            guarded.fill((byte) 0x5a);
            MemorySegment words = guarded.asSlice(8, 8L * WORDS);
            SplittableRandom setup = new SplittableRandom(seed);
            long[] initial = new long[WORDS];
            for (int w = 0; w < WORDS; w++) {
                initial[w] = setup.nextLong();
                words.setAtIndex(ValueLayout.JAVA_LONG, w, initial[w]);
            }
            RemoteMemoryKey key = owner.registerMemory(words);
            Endpoint[] eps = {init[0].connect(owner.address()), init[1].connect(owner.address())};
            List<List<Amo>> issued = List.of(new ArrayList<>(), new ArrayList<>());
            AtomicReference<Throwable> error = new AtomicReference<>();
            Thread[] threads = new Thread[2];
            for (int t = 0; t < 2; t++) {
                int me = t;
                SplittableRandom rnd = setup.split();
                threads[t] = new Thread(() -> {
                    try {
                        issue(base + "initiator " + me, rnd, eps[me], init[me], key, issued.get(me));
                    } catch (Throwable e) {
                        error.compareAndSet(null, e);
                    }
                }, "rma-random-amo-" + t);
                threads[t].start();
            }
            for (Thread t : threads) {
                t.join(60_000);
            }
            if (error.get() != null) {
                throw new AssertionError(base + error.get(), error.get());
            }
            System.out.println(base + issued.get(0).size() + " + " + issued.get(1).size() + " atomics");
            for (int w = 0; w < WORDS; w++) {
                List<Amo> mine = new ArrayList<>();
                for (List<Amo> l : issued) {
                    for (Amo x : l) {
                        if (x.word == w) {
                            mine.add(x);
                        }
                    }
                }
                long fin = words.getAtIndex(ValueLayout.JAVA_LONG, w);
                assertChain(base + "word " + w + " (" + mine.size() + " atomics)", initial[w], fin, mine);
            }
            assertEquals(0x5a5a5a5a5a5a5a5aL, guarded.get(ValueLayout.JAVA_LONG, 0), base + "guard before written");
            assertEquals(0x5a5a5a5a5a5a5a5aL, guarded.get(ValueLayout.JAVA_LONG, 8L * (WORDS + 1)),
                    base + "guard after written");
            // edges: one past the last word, one before the first, misaligned: refused before sending
            long[] bad = {key.base() + 8L * WORDS, key.base() - 8, key.base() + 4, key.base() + 8L * WORDS - 4};
            for (long at : bad) {
                Future<Long> f = eps[0].atomic(AtomicOp.ADD, key, at, 1);
                assertTrue(f.await(5, TimeUnit.SECONDS), base + "atomic at offset " + (at - key.base()));
                assertInstanceOf(IllegalArgumentException.class, f.cause(),
                        base + "atomic at offset " + (at - key.base()) + " not refused");
            }
            long[] before = words.toArray(ValueLayout.JAVA_LONG);
            owner.unregisterMemory(key);
            for (int w = 0; w < WORDS; w++) {
                int word = w;
                ExecutionException e = assertThrows(ExecutionException.class, () -> eps[word % 2]
                        .atomic(AtomicOp.XOR, key, key.base() + 8L * word, -1).get(10, TimeUnit.SECONDS),
                        base + "atomic after unregister");
                assertInstanceOf(RemoteAccessException.class, e.getCause(), base + "atomic after unregister");
            }
            assertTrue(Arrays.equals(before, words.toArray(ValueLayout.JAVA_LONG)), base + "refused atomics wrote");
            for (Endpoint ep : eps) {
                ep.close().sync();
            }
        }
    }

    private static void issue(String base, SplittableRandom rnd, Endpoint ep, Worker worker, RemoteMemoryKey key,
                              List<Amo> out) throws Exception {
        long end = System.nanoTime() + BUDGET_NANOS / 2;
        long[] seen = new long[WORDS];
        int flushes = 0;
        while (System.nanoTime() < end) {
            int batch = rnd.nextInt(1, 300);
            int from = out.size();
            for (int i = 0; i < batch; i++) {
                AtomicOp op = AtomicOp.values()[rnd.nextInt(AtomicOp.values().length)];
                int word = rnd.nextInt(WORDS);
                long value = switch (op) {
                    case AND -> ~(1L << rnd.nextInt(64));
                    case OR -> 1L << rnd.nextInt(64);
                    default -> rnd.nextLong();
                };
                long compare = rnd.nextBoolean() ? seen[word] : rnd.nextLong();
                long address = key.base() + 8L * word;
                Future<Long> f = op == AtomicOp.CSWAP ? ep.compareAndSwap(key, address, compare, value)
                        : ep.atomic(op, key, address, value);
                out.add(new Amo(op, word, value, compare, f));
            }
            Future<Void> flush = rnd.nextBoolean() ? ep.flushRma() : worker.flushRma();
            assertTrue(flush.await(20, TimeUnit.SECONDS), base + "flush " + flushes + " did not complete");
            assertNull(flush.cause(), base + "flush " + flushes + " failed");
            for (int i = from; i < out.size(); i++) {
                Amo x = out.get(i);
                assertTrue(x.result.isDone(), base + "flush " + flushes + " completed before atomic " + i + " "
                        + x.op + " on word " + x.word);
                assertNull(x.result.cause(), base + "atomic " + i + " " + x.op + " failed");
                seen[x.word] = x.result.getNow();
            }
            flushes++;
        }
    }

    /**
     * The steps (previous value to new value) of one word's atomics, applied one at a time in some order, form one
     * trail from {@code initial} to {@code fin} through every step: degrees balance and the steps are connected.
     */
    private static void assertChain(String what, long initial, long fin, List<Amo> ops) {
        Map<Long, Integer> balance = new HashMap<>();
        Map<Long, Long> parent = new HashMap<>();
        for (Amo x : ops) {
            long old = x.result.getNow();
            long now = x.applied(old);
            balance.merge(old, 1, Integer::sum);
            balance.merge(now, -1, Integer::sum);
            union(parent, old, now);
        }
        balance.merge(initial, -1, Integer::sum);
        balance.merge(fin, 1, Integer::sum);
        for (Map.Entry<Long, Integer> e : balance.entrySet()) {
            if (e.getValue() != 0) {
                fail(what + ": value 0x" + Long.toHexString(e.getKey()) + " left " + (e.getValue() > 0 ? "by "
                        + e.getValue() + " more atomics than reached it" : "by " + -e.getValue() + " fewer atomics "
                        + "than reached it") + ": a lost update or a wrong previous value (initial 0x"
                        + Long.toHexString(initial) + ", final 0x" + Long.toHexString(fin) + ")");
            }
        }
        if (!ops.isEmpty()) {
            long root = find(parent, initial);
            for (Long v : parent.keySet()) {
                assertEquals(root, find(parent, v), what + ": value 0x" + Long.toHexString(v)
                        + " is not reachable from the initial value");
            }
            assertEquals(root, find(parent, fin), what + ": the final value is not reachable");
        } else {
            assertEquals(initial, fin, what + ": changed with no atomics");
        }
    }

    private static long find(Map<Long, Long> parent, long v) {
        Long p = parent.get(v);
        if (p == null) {
            parent.put(v, v);
            return v;
        }
        while (p != v) {
            long gp = parent.get(p);
            parent.put(v, gp);
            v = p;
            p = gp;
        }
        return v;
    }

    private static void union(Map<Long, Long> parent, long a, long b) {
        long ra = find(parent, a);
        long rb = find(parent, b);
        if (ra != rb) {
            parent.put(ra, rb);
        }
    }

    // ---------------------------------------------------------------------------------------------------------------

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"shm,cma endpoint", "tcp,cma worker", "shm,cma target", "tcp,cma target"})
    void closedMidOperationCompletesEverythingAndWritesNothingAfter(String setting) throws Exception {
        String tls = setting.split(" ")[0];
        String closing = setting.split(" ")[1];
        assumeCma(tls);
        long seed = SEED ^ setting.hashCode() ^ 0x2545F4914F6CDD1DL;
        System.out.println("RmaRandomTest close " + setting + ": seed " + seed + " (-Dtest.rma.seed=" + SEED + ")");
        String base = ctx(seed, "close " + setting);
        SplittableRandom rnd = new SplittableRandom(seed);
        DefaultWorker a = workers.start("a", "TLS", tls);
        DefaultWorker b = workers.start("b", "TLS", tls);
        try (Arena arena = Arena.ofShared()) {
            int slot = 1 << 20;
            int slots = 12;
            MemorySegment region = arena.allocate((long) slot * slots + 64, 4096);
            RemoteMemoryKey key = b.registerMemory(region);
            Endpoint ab = a.connect(b.address());
            assertTrue(ab.wireupFuture().await(10, TimeUnit.SECONDS), base + "wireup");
            List<Future<?>> all = new ArrayList<>();
            byte[][] data = new byte[slots][];
            List<Future<Void>> puts = new ArrayList<>();
            for (int i = 0; i < slots; i++) {
                int n = rnd.nextInt(1, slot + 1);
                data[i] = new byte[n];
                rnd.nextBytes(data[i]);
                MemorySegment local = rnd.nextBoolean() ? MemorySegment.ofArray(data[i].clone())
                        : arena.allocate(n).copyFrom(MemorySegment.ofArray(data[i]));
                Future<Void> f = ab.put(local, key, key.base() + (long) i * slot);
                puts.add(f);
                all.add(f);
                if (rnd.nextInt(3) == 0) {
                    all.add(ab.get(arena.allocate(rnd.nextInt(1, slot)), key, key.base() + (long) i * slot));
                }
                if (rnd.nextInt(3) == 0) {
                    all.add(ab.fenceRma());
                }
                all.add(ab.atomic(AtomicOp.ADD, key, key.base() + (long) slot * slots + 8L * rnd.nextInt(8), 1));
            }
            all.add(ab.flushRma());
            if (rnd.nextBoolean()) {
                Thread.sleep(rnd.nextInt(3));
            }
            // the initiator's endpoint or worker closes (graceful), or the target's worker goes away under it
            Future<Void> closed = switch (closing) {
                case "worker" -> a.close();
                case "endpoint" -> ab.close();
                default -> b.close();
            };
            assertTrue(closed.await(10, TimeUnit.SECONDS), base + "close did not complete");
            if (closing.equals("target")) {
                assertTrue(ab.errorFuture().await(10, TimeUnit.SECONDS), base + "the endpoint did not end");
            }
            byte[] after = region.toArray(ValueLayout.JAVA_BYTE);
            for (int i = 0; i < all.size(); i++) {
                assertTrue(all.get(i).await(10, TimeUnit.SECONDS), base + "operation " + i + " never completed");
            }
            Thread.sleep(50);
            assertEquals(-1, Arrays.mismatch(after, region.toArray(ValueLayout.JAVA_BYTE)),
                    base + "the target changed after the close completed");
            long adds = 0;
            for (int w = 0; w < 8; w++) {
                adds += region.get(ValueLayout.JAVA_LONG, (long) slot * slots + 8L * w);
            }
            System.out.println(base + all.stream().filter(Future::isSuccess).count() + " of " + all.size()
                    + " operations succeeded");
            long succeeded = all.stream().filter(f -> f.isSuccess() && f.getNow() instanceof Long).count();
            assertTrue(adds >= succeeded, base + adds + " adds landed, " + succeeded + " reported done");
            for (int i = 0; i < slots; i++) {
                if (puts.get(i).isSuccess()) {
                    assertBytes(base + "put " + i + " reported done", data[i],
                            region.asSlice((long) i * slot, data[i].length));
                }
            }
        }
    }
}
