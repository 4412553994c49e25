package io.nucx.wireup;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.Future;
import io.nucx.AmMessage;
import io.nucx.Endpoint;
import io.nucx.NucxBootstrap;
import io.nucx.Worker;
import io.nucx.protocol.select.ProtoTable;
import io.nucx.protocol.select.SelectionKey;
import io.nucx.protocol.tag.EagerProtocols;
import io.nucx.protocol.tag.MessageTruncatedException;
import io.nucx.protocol.tag.RndvProtocols;
import io.nucx.protocol.tag.TagMessage;
import io.nucx.transport.NucxConfigException;
import io.nucx.transport.cma.Cma;
import io.nucx.transport.rdma.VerbsEmulator;
import io.nucx.transport.testing.LeakRecorder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.ByteArrayOutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeSet;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Every protocol path moves the right bytes, whatever protocol a configuration forces: each case (seeded) takes a
 * transport set, a random forced configuration (NUCX_PROTOS restricted to sets that still carry every size, rendezvous,
 * zero-copy and copy thresholds at 0, 1, odd values or next to a segment size, the rendezvous scheme, small segment and
 * ring sizes, tcp's placement, rendezvous lanes) and sends a batch of tagged messages (plain and sync; receives posted
 * before and after arrival, into heap, direct, MemorySegment and too-small buffers), stream writes and active messages
 * with user headers, of sizes around the boundaries that configuration's protocol tables and segments imply, from heap,
 * direct, sliced, composite and MemorySegment buffers. Every message must arrive exactly once with exactly its bytes, a
 * receive too small must fail with truncation (and a sync sender be told), an active message whose user header no RTS
 * holds be refused, saying so, only where NUCX_PROTOS leaves out the copy protocol that would carry it, every future
 * complete within its bound, no protocol the configuration left out carry anything, no buffer leak; and an invalid
 * value in the case's configuration must stop start-up naming its setting.
 * Seed: {@code -Dtest.protoforced.seed=N} replays a run ({@code -Dtest.protoforced.cases=1} that case alone);
 * {@code -Dtest.protoforced.tls=tcp} runs one transport set; every assertion names the seed.
 */
@Timeout(300)
class ProtocolForcedRandomTest {

    private static final int AM_ID = 7;
    private static final int MIB = 1 << 20;
    /** Bytes of data one case sends at most (PARANOID leak detection makes large copies slow). */
    private static final long CASE_BYTES = 24L * MIB;
    private static final int WAIT_SECONDS = 30;

    /**
     * NUCX_PROTOS values that still carry every message, plain and sync, heap and direct, and whether a rendezvous
     * threshold above 0 leaves sizes without a protocol (no eager one covers them: the threshold is then auto or 0).
     */
    private static final String[][] PROTOS = {
        {"all", "any"},
        {"egr/multi/bcopy,egrsnc/multi/bcopy", "any"},
        {"egr/*,egrsnc/*", "any"},
        {"tag/rndv", "zero"},
        {"egr/short,tag/rndv", "zero"},
        {"egr/single/bcopy,egrsnc/single/bcopy,tag/rndv", "zero"},
        {"^tag/rndv", "any"},
        {"egr/multi/zcopy,egr/multi/bcopy,egrsnc/multi/bcopy", "any"},
        {"egr/single/zcopy,egr/short,egr/multi/bcopy,egrsnc/*", "any"},
        {"rndv/get/zcopy,egr/multi/bcopy,egrsnc/multi/bcopy", "any"},
        {"rndv/put/zcopy,egr/multi/bcopy,egrsnc/multi/bcopy", "any"},
        {"rndv/*,egr/multi/bcopy,egrsnc/multi/bcopy", "any"},
        {"^egr/multi/bcopy,egrsnc/multi/bcopy", "zero"},
    };

    private static final String[] EAGER = {"egr/short", "egr/single/bcopy", "egr/multi/bcopy", "egr/single/zcopy",
        "egr/multi/zcopy", "egrsnc/single/bcopy", "egrsnc/multi/bcopy"};

    private static long seed() {
        return Long.getLong("test.protoforced.seed", System.nanoTime());
    }

    enum Kind { TAG, SYNC, STREAM, AM }

    /**
     * One message: {@code into} for tagged receives (0 none, 1 heap exact, 2 direct with room, 3 MemorySegment exact,
     * 4 one byte too small, 5 direct after bytes of its own), {@code late}: its receive posted once it arrived.
     */
    record Msg(int index, Kind kind, int size, int header, int buffer, int into, boolean late) {
        boolean truncated() {
            return into == 4;
        }

        @Override
        public String toString() {
            return "#" + index + " " + kind + " " + size + "B" + (kind == Kind.AM ? " h" + header : "") + " buf"
                    + buffer + (kind == Kind.TAG || kind == Kind.SYNC ? " into" + into + (late ? " late" : "") : "");
        }
    }

    static byte[] bytes(long seed, int index, int part, int length) {
        byte[] b = new byte[length];
        new SplittableRandom(seed * 1_000_003L + index * 2L + part).nextBytes(b);
        return b;
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"self", "shm", "tcp", "shm,cma", "tcp,cma", "shm,tcp,cma", "rdma,tcp"})
    void everyForcedProtocolMovesExactlyTheBytesSent(String tls) throws Exception {
        String only = System.getProperty("test.protoforced.tls");
        assumeTrue(only == null || only.equals(tls), "test.protoforced.tls=" + only);
        if (tls.contains("cma")) {
            assumeTrue(Cma.availability().isAvailable(), () -> Cma.availability().reason());
        }
        if (tls.contains("rdma")) {
            String missing = VerbsEmulator.missing();
            assumeTrue(missing == null, () -> missing);
        }
        long base = seed();
        int cases = Integer.getInteger("test.protoforced.cases", 3);
        for (int c = 0; c < cases; c++) {
            runCase(tls, base + c);
        }
    }

    /**
     * Found by the random cases (seeds 45456114911702 over shm,cma and 45498446176583 over rdma,tcp): an active message
     * sent by rendezvous whose user header does not fit the RTS frame with it (shm segments of 4 KiB, rdma ones of 1 to
     * 4 KiB, a 4,096-byte header) was written as a frame the lane could not carry, and its send never completed. It
     * goes eagerly instead; with a GET key that the frame cannot hold as well, the key is left out; where NUCX_PROTOS
     * leaves no copy protocol, it is refused at once, saying why.
     */
    @ParameterizedTest(name = "{0} {1} h{2}")
    @CsvSource(delimiter = '|', value = {
        "shm|SHM_SEG_SIZE=4096;RNDV_THRESH=0|4096|arrives",
        "shm|SHM_SEG_SIZE=4097;RNDV_THRESH=0;RNDV_SCHEME=am|4096|arrives",
        "rdma,tcp|RDMA_SEG_SIZE=4096;RNDV_THRESH=0|4096|arrives",
        "rdma,tcp|RDMA_SEG_SIZE=1024;RNDV_THRESH=0;RNDV_SCHEME=put_zcopy|1001|arrives",
        "rdma,tcp|RDMA_SEG_SIZE=1024;RNDV_THRESH=0;RNDV_SCHEME=get_zcopy|960|arrives", // fits, not with a key
        "shm|SHM_SEG_SIZE=4096;PROTOS=tag/rndv|4096|refused",
    })
    void anActiveMessageWhoseUserHeaderNoRtsHoldsStillCompletes(String tls, String setting, int header,
                                                               String expect) throws Exception {
        if (tls.contains("rdma")) {
            String missing = VerbsEmulator.missing();
            assumeTrue(missing == null, () -> missing);
            setting += ";VERBS_LIB=" + VerbsEmulator.library();
        }
        Map<String, String> s = new LinkedHashMap<>();
        String[] pairs = TestWorkers.settings(tls, setting);
        for (int i = 0; i < pairs.length; i += 2) {
            s.put(pairs[i], pairs[i + 1]);
        }
        Worker a = start("a", s, null);
        try {
            Worker b = start("b", s, null);
            try {
                List<AmGot> got = new CopyOnWriteArrayList<>();
                SplittableRandom hr = new SplittableRandom(1);
                b.setAmHandler(AM_ID, m -> onAm(m, got, hr));
                Msg m = new Msg(3, Kind.AM, 50_000, header, 2, 0, false);
                ChannelFuture f = TestWorkers.wiredUp(a, b).amSend(AM_ID, Unpooled.wrappedBuffer(header(1, m)),
                        buffer(bytes(1, 3, 1, m.size()), 2, null));
                assertTrue(f.await(WAIT_SECONDS, TimeUnit.SECONDS), "the send never completed");
                if (expect.equals("refused")) {
                    assertTrue(f.cause() != null && f.cause().getMessage().contains("does not fit a rendezvous RTS"),
                            () -> "not refused as it should: " + f.cause());
                    return;
                }
                assertTrue(f.isSuccess(), () -> "failed: " + f.cause());
                TestWorkers.awaitTrue(() -> got.size() == 1 && got.get(0).done(), "the message did not arrive");
                assertTrue(got.get(0).failure == null, () -> String.valueOf(got.get(0).failure));
                assertBytes("header", header(1, m), got.get(0).header);
                assertBytes("data", bytes(1, 3, 1, m.size()), got.get(0).data);
            } finally {
                b.close().get(10, TimeUnit.SECONDS);
            }
        } finally {
            a.close().get(10, TimeUnit.SECONDS);
        }
    }

    /** The configuration of a case: settings, and the sizes near which they change something. */
    private static Map<String, String> configure(String tls, SplittableRandom r, TreeSet<Integer> edges) {
        Map<String, String> s = new LinkedHashMap<>();
        s.put("TLS", tls);
        if (tls.contains("rdma")) {
            s.put("VERBS_LIB", VerbsEmulator.library());
            int seg = new int[] {1024, 1025, 4096, 8192}[r.nextInt(4)];
            s.put("RDMA_SEG_SIZE", String.valueOf(seg));
            edges.add(seg);
        }
        if (tls.contains("shm")) {
            boolean small = r.nextBoolean();
            s.put("SHM_RING_SIZE", small ? "65536" : "4194304");
            int seg = small ? new int[] {4096, 4097, 8128}[r.nextInt(3)]
                    : new int[] {4096, 5000, 65536, 65537, 200_003}[r.nextInt(5)];
            s.put("SHM_SEG_SIZE", String.valueOf(seg));
            edges.add(seg);
        }
        if (tls.contains("tcp")) {
            int seg = new int[] {8192, 8193, 12_345, 65_536, 131_072}[r.nextInt(5)];
            s.put("TCP_SEG_SIZE", String.valueOf(seg));
            edges.add(seg);
        }
        if (tls.equals("self")) {
            s.put("SELF_QUEUE_BYTES", new String[] {"4096", "4097", "65536", "1m"}[r.nextInt(4)]);
        }
        if (tls.contains("tcp")) {
            s.put("TCP_PLACE", r.nextBoolean() ? "y" : "n");
        }
        // Rendezvous data spread over one lane or several (shm and tcp together only with a ratio that admits tcp).
        s.put("MAX_RNDV_LANES", String.valueOf(new int[] {1, 2, 8}[r.nextInt(3)]));
        if (r.nextBoolean()) {
            s.put("MULTI_LANE_MAX_RATIO", "1000");
        }
        String[] protos = PROTOS[r.nextInt(PROTOS.length)];
        s.put("PROTOS", protos[0]);
        int seg = edges.isEmpty() ? 8192 : edges.first();
        String rndv = switch (r.nextInt(protos[1].equals("zero") ? 2 : 7)) {
            case 0 -> "auto";
            case 1 -> "0";
            case 2 -> "1";
            case 3 -> String.valueOf(seg - 1);
            case 4 -> String.valueOf(seg + 1);
            case 5 -> String.valueOf(r.nextInt(2, 300_000));
            default -> String.valueOf(MIB + 1);
        };
        s.put("RNDV_THRESH", rndv);
        s.put("RNDV_SCHEME", new String[] {"auto", "get_zcopy", "put_zcopy", "am"}[r.nextInt(4)]);
        s.put("ZCOPY_THRESH", new String[] {"auto", "inf", "0", "1", String.valueOf(seg),
            String.valueOf(r.nextInt(2, 200_000))}[r.nextInt(6)]);
        if (protos[0].equals("all") && rndv.equals("auto") && r.nextInt(3) == 0) {
            // Copy protocols are not used below it: only with every protocol there to take those sizes.
            s.put("BCOPY_THRESH", String.valueOf(r.nextInt(1, 20_000)));
        }
        if (rndv.equals("auto") && r.nextBoolean()) {
            s.put("EAGER_MAX", new String[] {"0", "1", "65537", "1m"}[r.nextInt(4)]);
        }
        for (String v : new String[] {s.get("RNDV_THRESH"), s.get("ZCOPY_THRESH"), s.get("BCOPY_THRESH"),
            s.get("EAGER_MAX")}) {
            if (v != null && v.matches("\\d+") && Long.parseLong(v) < Integer.MAX_VALUE) {
                edges.add((int) Long.parseLong(v));
            }
        }
        return s;
    }

    /** An invalid value for one of the case's settings, which start-up must refuse naming it. */
    private static String[] invalid(Map<String, String> s, SplittableRandom r) {
        List<String[]> bad = new ArrayList<>(List.of(
                new String[] {"PROTOS", "egr/nope"},
                new String[] {"RNDV_SCHEME", "put"},
                new String[] {"RNDV_THRESH", "-5"},
                new String[] {"ZCOPY_THRESH", "12q"},
                new String[] {"BCOPY_THRESH", "lots"},
                new String[] {"EAGER_MAX", "-1"},
                new String[] {"MAX_RNDV_LANES", "9"}));
        if (s.containsKey("TCP_SEG_SIZE")) {
            bad.add(new String[] {"TCP_SEG_SIZE", "7k"});
            bad.add(new String[] {"TCP_SEG_SIZE", "17m"});
        }
        if (s.containsKey("SHM_SEG_SIZE")) {
            bad.add(new String[] {"SHM_SEG_SIZE", "3k"});
            bad.add(new String[] {"SHM_RING_SIZE", "100k"});
            if (s.get("SHM_RING_SIZE").equals("65536")) {
                bad.add(new String[] {"SHM_SEG_SIZE", "8129"}); // over ring / 8 - 64
            }
        }
        if (s.containsKey("RDMA_SEG_SIZE")) {
            bad.add(new String[] {"RDMA_SEG_SIZE", "1023"});
        }
        if (s.containsKey("SELF_QUEUE_BYTES")) {
            bad.add(new String[] {"SELF_QUEUE_BYTES", "4095"});
        }
        return bad.get(r.nextInt(bad.size()));
    }

    private static Worker start(String name, Map<String, String> s, ChannelHandler handler) throws Exception {
        NucxBootstrap b = new NucxBootstrap().name(name).endpointHandler(handler);
        s.forEach(b::config);
        return b.start();
    }

    /** A size near one of {@code edges}, small, or now and then a few MiB. */
    private static int size(SplittableRandom r, List<Integer> edges, long left) {
        int k = r.nextInt(100);
        int n;
        if (k < 15) {
            n = r.nextInt(3);
        } else if (k < 30) {
            n = r.nextInt(300);
        } else if (k < 85) {
            int e = edges.get(r.nextInt(edges.size()));
            n = Math.max(0, switch (r.nextInt(5)) {
                case 0 -> e - 1;
                case 1 -> e;
                case 2 -> e + 1;
                case 3 -> 2 * e + r.nextInt(1, 100); // several fragments
                default -> e + r.nextInt(-64, 65);
            });
        } else if (k < 95) {
            n = r.nextInt(2, 400_000);
        } else {
            n = r.nextInt(MIB, 5 * MIB);
        }
        return (int) Math.min(n, Math.max(0, left));
    }

    /**
     * {@code b} in a send buffer of {@code kind}: AmRandomMixTest's (wrapped with bytes around, heap, direct,
     * composite), a retained slice (3), a MemorySegment (5).
     */
    private static ByteBuf buffer(byte[] b, int kind, Arena arena) {
        int n = b.length;
        return switch (kind) {
            case 0, 1, 2, 4 -> AmRandomMixTest.buffer(b, kind);
            case 3 -> {
                ByteBuf d = ByteBufAllocator.DEFAULT.directBuffer(n + 11).writeZero(7).writeBytes(b).writeZero(4);
                try {
                    yield d.retainedSlice(7, n);
                } finally {
                    d.release();
                }
            }
            default -> {
                MemorySegment seg = arena.allocate(Math.max(n, 1));
                MemorySegment.copy(b, 0, seg, ValueLayout.JAVA_BYTE, 0, n);
                yield Unpooled.wrappedBuffer(seg.asByteBuffer()).slice(0, n);
            }
        };
    }

    /** The stream's reader on the receiving worker: every byte in order. */
    @ChannelHandler.Sharable
    static final class StreamReader extends ChannelInboundHandlerAdapter {
        final ByteArrayOutputStream got = new ByteArrayOutputStream();
        final List<String> problems = new CopyOnWriteArrayList<>();

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (msg instanceof ByteBuf b) {
                byte[] a = new byte[b.readableBytes()];
                b.getBytes(b.readerIndex(), a);
                synchronized (got) {
                    got.writeBytes(a);
                }
            } else {
                problems.add("not bytes: " + msg);
            }
            ReferenceCountUtil.release(msg);
        }

        int size() {
            synchronized (got) {
                return got.size();
            }
        }

        byte[] bytes() {
            synchronized (got) {
                return got.toByteArray();
            }
        }
    }

    private void runCase(String tls, long seed) throws Exception {
        SplittableRandom r = new SplittableRandom(seed);
        TreeSet<Integer> edgeSet = new TreeSet<>();
        Map<String, String> settings = configure(tls, r, edgeSet);
        String what = "seed " + seed + " " + settings;
        System.out.println("ProtocolForcedRandomTest " + what);

        // An invalid value stops start-up, naming its setting.
        String[] bad = invalid(settings, r);
        Map<String, String> badSettings = new LinkedHashMap<>(settings);
        badSettings.put(bad[0], bad[1]);
        NucxConfigException refused = assertThrows(NucxConfigException.class,
                () -> start("bad", badSettings, null).close().get(10, TimeUnit.SECONDS),
                () -> what + ": " + bad[0] + "=" + bad[1] + " was accepted");
        assertTrue(refused.getMessage().contains(bad[0]), () -> what + ": " + bad[0] + "=" + bad[1]
                + " refused without naming it: " + refused.getMessage());

        StreamReader stream = new StreamReader();
        Worker a = null;
        Worker b = null;
        Arena arena = Arena.ofShared();
        try {
            a = start("a", settings, null);
            b = start("b", settings, stream);
            for (SelectionKey.MemoryType m : new SelectionKey.MemoryType[] {SelectionKey.MemoryType.HEAP,
                SelectionKey.MemoryType.DIRECT}) {
                ProtoTable t = a.protocolTable(b.address(), m);
                for (ProtoTable.Entry e : t.entries()) {
                    if (e.start() > 0 && e.start() < 64 * MIB) {
                        edgeSet.add((int) e.start());
                    }
                }
            }
            edgeSet.add(1);
            List<Integer> edges = new ArrayList<>(edgeSet);
            runMessages(a, b, stream, r, seed, edges, settings.get("PROTOS"), what + " edges " + edges,
                    arena);
        } finally {
            for (Worker w : new Worker[] {a, b}) {
                if (w != null) {
                    w.close().get(10, TimeUnit.SECONDS);
                }
            }
            arena.close(); // after the workers: nothing sends from or receives into its memory any more
        }
        checkLeaks(what);
    }

    private static void checkLeaks(String what) {
        // A leaked buffer is reported when it is collected and the detector next looks (at an allocation).
        System.gc();
        for (int i = 0; i < 64; i++) {
            ByteBufAllocator.DEFAULT.directBuffer(64).release();
            ByteBufAllocator.DEFAULT.heapBuffer(64).release();
        }
        List<String> leaks = LeakRecorder.collect();
        assertTrue(leaks.isEmpty(), () -> what + ": " + leaks.size() + " leak(s):\n" + String.join("\n", leaks));
    }

    /** An active message as it arrived: its header, and later its data or what went wrong. */
    static final class AmGot {
        final byte[] header;
        final boolean rendezvous;
        volatile byte[] data;
        volatile Throwable failure;

        AmGot(byte[] header, boolean rendezvous) {
            this.header = header;
            this.rendezvous = rendezvous;
        }

        boolean done() {
            return data != null || failure != null;
        }
    }

    private void runMessages(Worker a, Worker b, StreamReader stream, SplittableRandom r, long seed,
                             List<Integer> edges, String spec, String what, Arena arena) throws Exception {
        int count = r.nextInt(20, 60);
        List<Msg> msgs = new ArrayList<>();
        int refusedCount = 0;
        long left = CASE_BYTES;
        for (int i = 0; i < count; i++) {
            int k = r.nextInt(10);
            Kind kind = k < 5 ? Kind.TAG : k < 7 ? Kind.SYNC : k < 8 ? Kind.STREAM : Kind.AM;
            int size = size(r, edges, left);
            left -= size;
            int header = kind != Kind.AM ? 0 : switch (r.nextInt(5)) {
                case 0, 1 -> 0;
                case 2 -> 4096;
                default -> r.nextInt(1, 300);
            };
            int into = r.nextInt(6);
            if (into == 4 && size == 0) {
                into = 0;
            }
            msgs.add(new Msg(i, kind, size, header, r.nextInt(6), into, r.nextInt(3) == 0));
        }
        String all = what + " messages " + msgs;

        // Active messages: checked in the handler, received into a buffer of its own (a too-small one first now and
        // then, which must fail touching nothing).
        List<AmGot> amGot = new CopyOnWriteArrayList<>();
        SplittableRandom hr = new SplittableRandom(seed ^ 0x5DEECE66DL);
        b.setAmHandler(AM_ID, m -> onAm(m, amGot, hr));

        // Receives posted before their message arrives.
        Map<Integer, Future<TagMessage>> receives = new LinkedHashMap<>();
        Map<Integer, ByteBuf> intos = new LinkedHashMap<>();
        Map<Integer, MemorySegment> segments = new LinkedHashMap<>();
        try {
            for (Msg m : msgs) {
                if ((m.kind() == Kind.TAG || m.kind() == Kind.SYNC) && !m.late()) {
                    receives.put(m.index(), post(b, m, intos, segments, arena));
                }
            }
            Endpoint ab = a.connect(b.address());
            List<ChannelFuture> sends = new ArrayList<>();
            ByteArrayOutputStream streamed = new ByteArrayOutputStream();
            int amSent = 0;
            int late = 0;
            for (Msg m : msgs) {
                byte[] data = bytes(seed, m.index(), 1, m.size());
                ByteBuf buf = buffer(data, m.buffer(), arena);
                sends.add(switch (m.kind()) {
                    case TAG -> ab.tagSend(m.index(), buf);
                    case SYNC -> ab.tagSendSync(m.index(), buf);
                    case STREAM -> {
                        streamed.writeBytes(data);
                        yield ab.streamSend(buf);
                    }
                    case AM -> {
                        amSent++;
                        byte[] h = header(seed, m);
                        yield ab.amSend(AM_ID, Unpooled.wrappedBuffer(h), buf, m.index() % 2 == 0);
                    }
                });
                if ((m.kind() == Kind.TAG || m.kind() == Kind.SYNC) && m.late()) {
                    late++;
                }
            }
            // The late receives once every message they are for arrived (a rendezvous one: its RTS).
            int lateCount = late;
            Worker rb = b;
            TestWorkers.awaitOnLoop(b, () -> rb.unexpectedCount() >= lateCount,
                    all + ": " + lateCount + " messages did not arrive unexpected");
            for (Msg m : msgs) {
                if ((m.kind() == Kind.TAG || m.kind() == Kind.SYNC) && m.late()) {
                    receives.put(m.index(), post(b, m, intos, segments, arena));
                }
            }
            // Every tagged message once, with its bytes, or truncated where its receive is too small.
            for (Msg m : msgs) {
                Future<TagMessage> f = receives.get(m.index());
                if (f == null) {
                    continue;
                }
                String one = what + ": message " + m;
                if (!f.await(WAIT_SECONDS, TimeUnit.SECONDS)) {
                    fail(one + ": not received in " + WAIT_SECONDS + " s; " + all);
                }
                ByteBuf into = intos.get(m.index());
                if (m.truncated()) {
                    assertTrue(f.cause() instanceof MessageTruncatedException,
                            () -> one + ": a too-small receive ended with " + f.cause() + " / " + f.getNow());
                    assertEquals(0, into.writerIndex(), one + ": bytes written into the too-small buffer");
                    continue;
                }
                assertTrue(f.isSuccess(), () -> one + ": receive failed: " + f.cause() + "; " + all);
                TagMessage got = f.getNow();
                try {
                    assertEquals(m.index(), got.tag(), one + ": tag");
                    byte[] content = new byte[got.content().readableBytes()];
                    got.content().getBytes(got.content().readerIndex(), content);
                    assertBytes(one, bytes(seed, m.index(), 1, m.size()), content);
                } finally {
                    got.release();
                }
                if (into != null) {
                    int at = m.into() == 5 ? 7 : 0;
                    assertEquals(at + m.size(), into.writerIndex(), one + ": the receive buffer's writer index");
                    byte[] placed = new byte[m.size()];
                    into.getBytes(at, placed);
                    assertBytes(one + " (in the user's buffer)", bytes(seed, m.index(), 1, m.size()), placed);
                    if (m.into() == 5) {
                        for (int i = 0; i < 7; i++) {
                            assertEquals((byte) (0x70 + i), into.getByte(i), one + ": the buffer's own bytes");
                        }
                    }
                    MemorySegment seg = segments.get(m.index());
                    if (seg != null) {
                        byte[] inSeg = seg.asSlice(0, m.size()).toArray(ValueLayout.JAVA_BYTE);
                        assertBytes(one + " (in the MemorySegment)", bytes(seed, m.index(), 1, m.size()), inSeg);
                    }
                }
            }
            // Every send completes: a sync sender of a truncated message is told; an active message whose user
            // header no rendezvous RTS holds is refused, saying so, where no copy protocol may carry it; nothing else
            // fails.
            List<Msg> refused = new ArrayList<>();
            for (int i = 0; i < msgs.size(); i++) {
                Msg m = msgs.get(i);
                ChannelFuture f = sends.get(i);
                String one = what + ": send " + m;
                assertTrue(f.await(WAIT_SECONDS, TimeUnit.SECONDS), () -> one + ": not complete; " + all);
                if (m.kind() == Kind.AM && !enabled(spec, "egr/multi/bcopy") && f.cause() != null
                        && String.valueOf(f.cause().getMessage()).contains("does not fit a rendezvous RTS")) {
                    refused.add(m);
                } else if (m.truncated() && m.kind() == Kind.SYNC) {
                    assertTrue(f.cause() instanceof MessageTruncatedException,
                            () -> one + ": the sync sender was not told of the truncation: " + f.cause());
                } else if (m.truncated()) {
                    assertTrue(f.isSuccess() || f.cause() instanceof MessageTruncatedException,
                            () -> one + ": " + f.cause());
                } else {
                    assertTrue(f.isSuccess(), () -> one + ": failed: " + f.cause() + "; " + all);
                }
            }
            // The stream, every byte once and in order.
            byte[] expected = streamed.toByteArray();
            TestWorkers.awaitTrue(() -> stream.size() >= expected.length,
                    what + ": stream bytes " + stream.size() + " of " + expected.length);
            assertTrue(stream.problems.isEmpty(), () -> what + ": " + stream.problems);
            assertBytes(what + ": the stream", expected, stream.bytes());
            // Active messages, once each, in the order sent.
            int amCount = amSent - refused.size();
            TestWorkers.awaitTrue(() -> amGot.size() >= amCount && amGot.stream().allMatch(AmGot::done),
                    what + ": " + amGot.size() + " of " + amCount + " active messages");
            List<Msg> ams = msgs.stream().filter(m -> m.kind() == Kind.AM && !refused.contains(m)).toList();
            assertEquals(ams.size(), amGot.size(), what + ": active messages");
            for (int i = 0; i < ams.size(); i++) {
                Msg m = ams.get(i);
                AmGot g = amGot.get(i);
                String one = what + ": active message " + m + " (arrival " + i + ")";
                assertBytes(one + " header (out of order?)", header(seed, m), g.header);
                assertTrue(g.failure == null, () -> one + (g.rendezvous ? " (rendezvous)" : "") + ": " + g.failure);
                assertBytes(one + " data", bytes(seed, m.index(), 1, m.size()), g.data);
            }
            checkCounters(a, b, spec, what);
            refusedCount = refused.size();
        } finally {
            intos.values().forEach(ByteBuf::release);
            b.setAmHandler(AM_ID, null);
        }
        System.out.println("ProtocolForcedRandomTest " + what + ": " + msgs.size() + " messages ("
                + refusedCount + " refused), "
                + (CASE_BYTES - left) + " B; used " + used(a) + " / " + used(b));
    }

    /** The counters of {@code w} that counted something. */
    private static String used(Worker w) {
        StringBuilder s = new StringBuilder();
        w.counters().snapshot().forEach((k, v) -> {
            if (v.longValue() != 0) {
                s.append(s.isEmpty() ? "" : " ").append(k).append('=').append(v);
            }
        });
        return s.toString();
    }

    /** An active message's user header: its index, then bytes of its own. */
    private static byte[] header(long seed, Msg m) {
        byte[] h = bytes(seed, m.index(), 0, m.header());
        if (h.length >= 4) {
            h[0] = (byte) (m.index() >>> 24);
            h[1] = (byte) (m.index() >>> 16);
            h[2] = (byte) (m.index() >>> 8);
            h[3] = (byte) m.index();
        }
        return h;
    }

    /** On b's loop: the arrival recorded in order, its data received (a too-small buffer first now and then). */
    private static void onAm(AmMessage m, List<AmGot> got, SplittableRandom hr) {
        byte[] h = new byte[m.header().readableBytes()];
        m.header().getBytes(m.header().readerIndex(), h);
        AmGot g = new AmGot(h, m.isRendezvous());
        got.add(g);
        int n = (int) m.dataLength();
        if (n > 0 && hr.nextInt(4) == 0) {
            ByteBuf small = Unpooled.directBuffer(n - 1, n - 1);
            try {
                Future<Void> f = m.receiveData(small);
                if (!f.isDone() || !(f.cause() instanceof IllegalArgumentException) || small.writerIndex() != 0) {
                    g.failure = new AssertionError("a too-small buffer: done " + f.isDone() + ", " + f.cause()
                            + ", " + small.writerIndex() + " B written");
                    return;
                }
            } finally {
                small.release();
            }
        }
        ByteBuf into = hr.nextBoolean() ? Unpooled.directBuffer(n) : Unpooled.buffer(n);
        m.receiveData(into).addListener(x -> {
            try {
                if (x.isSuccess()) {
                    byte[] d = new byte[into.readableBytes()];
                    into.getBytes(into.readerIndex(), d);
                    g.data = d;
                } else {
                    g.failure = x.cause();
                }
            } finally {
                into.release();
            }
        });
    }

    /** Posts {@code m}'s receive on {@code b}, into a buffer of its kind. */
    private static Future<TagMessage> post(Worker b, Msg m, Map<Integer, ByteBuf> intos,
                                           Map<Integer, MemorySegment> segments, Arena arena) {
        int n = m.size();
        ByteBuf into = switch (m.into()) {
            case 1 -> Unpooled.buffer(n, n);
            case 2 -> ByteBufAllocator.DEFAULT.directBuffer(n + 100);
            case 3 -> {
                MemorySegment seg = arena.allocate(Math.max(n, 1));
                segments.put(m.index(), seg);
                yield Unpooled.wrappedBuffer(seg.asByteBuffer()).slice(0, n).clear();
            }
            case 4 -> m.size() % 2 == 0 ? Unpooled.buffer(n - 1, n - 1)
                    : ByteBufAllocator.DEFAULT.directBuffer(n - 1, n - 1);
            case 5 -> {
                ByteBuf d = ByteBufAllocator.DEFAULT.directBuffer(7 + n, 7 + n);
                for (int i = 0; i < 7; i++) {
                    d.writeByte(0x70 + i);
                }
                yield d;
            }
            default -> null;
        };
        if (into == null) {
            return b.tagRecv(m.index(), -1L);
        }
        intos.put(m.index(), into);
        return b.tagRecv(m.index(), -1L, into);
    }

    private static void assertBytes(String what, byte[] expected, byte[] got) {
        assertEquals(expected.length, got.length, what + ": length");
        int at = Arrays.mismatch(expected, got);
        assertTrue(at < 0, () -> what + ": differs at byte " + at + " of " + expected.length);
    }

    /** No protocol the configuration left out carried anything, on either side. */
    private static void checkCounters(Worker a, Worker b, String spec, String what) {
        for (String name : EAGER) {
            if (!enabled(spec, name)) {
                for (Worker w : new Worker[] {a, b}) {
                    assertEquals(0, w.counters().count(name), what + ": " + name + " carried messages on "
                            + w.name() + ": " + w.counters().snapshot());
                }
            }
        }
        boolean rndv = enabled(spec, RndvProtocols.TAG_RNDV.name()) || enabled(spec, RndvProtocols.GET_ZCOPY.name())
                || enabled(spec, RndvProtocols.PUT_ZCOPY.name());
        if (!rndv) {
            assertEquals(0, a.counters().count(RndvProtocols.TAG_RNDV.name()) + a.counters().count(
                    RndvProtocols.GET_ZCOPY.name()) + a.counters().count(RndvProtocols.PUT_COUNTER),
                    what + ": a rendezvous with none enabled: " + a.counters().snapshot());
        }
        assertTrue(EagerProtocols.SHORT.name().equals(EAGER[0]), "protocol names");
    }

    private static boolean enabled(String spec, String name) {
        if (spec.equals("all")) {
            return true;
        }
        boolean exclude = spec.startsWith("^");
        boolean matched = false;
        for (String glob : (exclude ? spec.substring(1) : spec).split(",")) {
            Pattern re = Pattern.compile(Pattern.quote(glob).replace("*", "\\E.*\\Q"));
            matched |= re.matcher(name).matches();
        }
        return matched != exclude;
    }

}
