package io.nucx.wireup;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.util.concurrent.Future;
import io.nucx.Endpoint;
import io.nucx.protocol.select.ProtoTable;
import io.nucx.protocol.select.SelectionKey;
import io.nucx.protocol.tag.EagerCodec;
import io.nucx.protocol.tag.MessageTruncatedException;
import io.nucx.protocol.tag.RndvCodec;
import io.nucx.protocol.tag.TagMessage;
import io.nucx.protocol.tag.TagReceive;
import io.nucx.transport.cma.Cma;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;


/**
 * Randomized tag matching end to end between two workers: two endpoints of one worker (two senders) send messages of
 * random tags and sizes (0 B to a few MiB, biased around every protocol boundary of the table and the fragment sizes)
 * by tagSend, tagSendSync or trySendShort, from heap or native memory; the other worker posts receives before or after
 * the messages arrive, with random masks, into buffers of its own (some too small) or not, some cancelled, and keeps
 * reusable receives posted. Checked: every message is taken by exactly one receive (delivered, or failed truncated),
 * with its tag and bytes, and matched in its sender's order (a receive that got a sender's message j was posted after
 * the receives that took each earlier message of that sender its tag and mask also match); every send completes
 * (failing only as truncated); nothing stays queued or leaks. Seed: -Dtest.tag.seed=N replays a run.
 */
@Timeout(120)
class TagMatchingRandomTest {

    private static final long SEED = Long.getLong("test.tag.seed", System.nanoTime());
    /** Time for the rounds of one case; the case then finishes its round and its checks. */
    private static final long BUDGET_NANOS = TimeUnit.MILLISECONDS.toNanos(
            Long.getLong("test.tag.millis", 2000));
    private static final int MAX_SIZE = (4 << 20) + 3;
    private static final long HIGH = 0xA5L << 56;

    @RegisterExtension
    final TestWorkers workers = new TestWorkers();

    /** A message sent. */
    private static final class Msg {
        final int id;
        final int sender;
        final int senderSeq;
        final long tag;
        final int size;
        final String how;
        ChannelFuture send;
        /** Consumed by (delivered to or truncated by) receives with these post numbers; one expected. */
        final List<Long> takenBy = new ArrayList<>();
        boolean truncated;

        Msg(int id, int sender, int senderSeq, long tag, int size, String how) {
            this.id = id;
            this.sender = sender;
            this.senderSeq = senderSeq;
            this.tag = tag;
            this.size = size;
            this.how = how;
        }

        @Override
        public String toString() {
            return "msg#" + id + "(sender " + sender + " #" + senderSeq + ", tag 0x" + Long.toHexString(tag) + ", "
                    + size + " B, " + how + ")";
        }
    }

    /** One posting of a receive (a reusable receive is posted many times). */
    private static final class Post {
        final long seq;
        final long tag;
        final long mask;
        final String kind;
        /** The user's buffer, its writer index before, its writable bytes; null without one. */
        final ByteBuf into;
        final int intoStart;
        final int capacity;
        volatile Future<TagMessage> promise;

        Post(long seq, long tag, long mask, String kind, ByteBuf into) {
            this.seq = seq;
            this.tag = tag;
            this.mask = mask;
            this.kind = kind;
            this.into = into;
            this.intoStart = into == null ? 0 : into.writerIndex();
            this.capacity = into == null ? Integer.MAX_VALUE : into.writableBytes();
        }

        boolean matches(long t) {
            return ((t ^ tag) & mask) == 0;
        }

        @Override
        public String toString() {
            return "post#" + seq + "(" + kind + ", tag 0x" + Long.toHexString(tag) + " mask 0x"
                    + Long.toHexString(mask) + (into == null ? "" : ", into " + capacity + " B at " + intoStart) + ")";
        }
    }

    /** What a posting ended with: data (owned), or a failure. */
    private record Outcome(Post post, long tag, ByteBuf data, Throwable failure) {
    }

    /** State of one case: touched on the receiver's loop, read by the test thread after a task on that loop. */
    private final class Run {
        final String name;
        final long seed;
        final SplittableRandom rnd;
        final SplittableRandom loopRnd;
        final DefaultWorker a;
        final DefaultWorker b;
        final Endpoint[] eps;
        final List<Integer> sizes;
        final List<Msg> msgs = new ArrayList<>();
        final Map<String, Msg> byTagSize = new HashMap<>();
        final int[] senderSeq = new int[2];
        final ConcurrentLinkedQueue<Outcome> outcomes = new ConcurrentLinkedQueue<>();
        final List<Post> pending = new ArrayList<>();
        final List<Reusable> reusables = new ArrayList<>();
        long postSeq; // loop only
        int outcomesSeen;

        Run(String name, long seed, DefaultWorker a, DefaultWorker b, Endpoint[] eps, List<Integer> sizes) {
            this.name = name;
            this.seed = seed;
            this.rnd = new SplittableRandom(seed);
            this.loopRnd = new SplittableRandom(seed * 31 + 7);
            this.a = a;
            this.b = b;
            this.eps = eps;
            this.sizes = sizes;
        }

        String ctx() {
            return "[seed=" + seed + " (-Dtest.tag.seed=" + SEED + ") " + name + "] ";
        }
    }

    /** A reusable receive, kept posted across rounds: re-posted from its handler, or later by the test. */
    private final class Reusable implements TagReceive.Handler {
        final Run run;
        final long tag;
        final long mask;
        final ByteBuf into;
        final TagReceive receive;
        Post current; // loop only
        boolean idle; // loop only

        Reusable(Run run, long tag, long mask, ByteBuf into) {
            this.run = run;
            this.tag = tag;
            this.mask = mask;
            this.into = into;
            this.receive = into == null ? TagReceive.reusable(tag, mask, this)
                    : TagReceive.reusable(tag, mask, into, this);
        }

        /** Loop only. */
        void post() {
            if (into != null) {
                into.clear();
                int pre = run.loopRnd.nextInt(4);
                into.writeZero(pre);
            }
            idle = false;
            current = new Post(run.postSeq++, tag, mask, into == null ? "reusable" : "reusable-into", into);
            run.b.tagRecv(receive);
        }

        private void ended() {
            if (run.loopRnd.nextInt(4) != 0) {
                post(); // from the handler: matched once it returns
            } else {
                idle = true;
            }
        }

        @Override
        public void received(long msgTag, ByteBuf data) {
            run.outcomes.add(new Outcome(current, msgTag, data, null));
            ended();
        }

        @Override
        public void receivedInto(long msgTag, ByteBuf buf, int index, int length) {
            Post p = current;
            ByteBuf copy = Unpooled.buffer(length);
            buf.getBytes(index, copy, length);
            Throwable wrong = buf == into && index == p.intoStart && buf.writerIndex() == index + length ? null
                    : new AssertionError(p + " told of " + length + " bytes at " + index + " of " + buf
                    + ", writer index " + buf.writerIndex());
            run.outcomes.add(new Outcome(p, msgTag, copy, wrong));
            ended();
        }

        @Override
        public void failed(Throwable cause) {
            run.outcomes.add(new Outcome(current, 0, null, cause));
            if (!(cause instanceof MessageTruncatedException)) {
                idle = false; // the worker closes
                return;
            }
            ended();
        }
    }

    @ParameterizedTest(name = "{0} {1}")
    @CsvSource({
        "self, -",
        "shm, -",
        "tcp, -",
        "tcp, RNDV_THRESH=16k;ZCOPY_THRESH=2k",
        "'shm,cma', RNDV_SCHEME=get_zcopy;SHM_COPY_BW=1g",
        "'shm,cma', RNDV_SCHEME=put_zcopy;SHM_COPY_BW=1g;RNDV_THRESH=8k",
    })
    void randomTaggedTrafficIsMatchedOnceInSenderOrderWithEveryByte(String tls, String setting) throws Exception {
        if (tls.contains("cma")) {
            assumeTrue(Cma.availability().isAvailable(), () -> Cma.availability().reason());
        }
        long seed = SEED ^ (tls + setting).hashCode();
        System.out.println("TagMatchingRandomTest " + tls + " " + setting + ": seed " + seed
                + " (-Dtest.tag.seed=" + SEED + ")");
        String[] settings = TestWorkers.settings(tls, setting);
        DefaultWorker a = workers.start("a", settings);
        DefaultWorker b = workers.start("b", settings);
        Endpoint[] eps = {a.connect(b.address()), a.connect(b.address())};
        Run run = new Run(tls + " " + setting, seed, a, b, eps, boundaries(a, b));
        // A few reusable receives stay posted throughout.
        int reusableCount = run.rnd.nextInt(3);
        for (int i = 0; i < reusableCount; i++) {
            long mask = randomMask(run.rnd);
            long tag = randomTag(run.rnd) ^ (run.rnd.nextLong() & ~mask);
            ByteBuf into = run.rnd.nextBoolean() ? null : ByteBufAllocator.DEFAULT.directBuffer(
                    run.rnd.nextBoolean() ? MAX_SIZE + 8 : run.rnd.nextInt(200_000));
            Reusable r = new Reusable(run, tag, mask, into);
            run.reusables.add(r);
        }
        onLoop(run, () -> run.reusables.forEach(Reusable::post));
        long deadline = System.nanoTime() + BUDGET_NANOS;
        int rounds = 0;
        try {
            do {
                round(run);
                rounds++;
            } while (System.nanoTime() < deadline);
            assertEquals(0, (int) b.eventLoop().submit(b::unexpectedCount).get(10, TimeUnit.SECONDS),
                    run.ctx() + "messages left unexpected");
            assertEquals(0, (int) a.eventLoop().submit(() -> a.sumOverCodecs(RndvCodec.class,
                    RndvCodec::sendsWaiting)).get(), run.ctx() + "rendezvous sends still waiting");
            assertEquals(0, (int) a.eventLoop().submit(() -> a.sumOverCodecs(EagerCodec.class,
                    c -> c.syncWaiting() + c.zcopyWaiting())).get(), run.ctx() + "eager sends still waiting");
            assertEquals(0, (int) b.eventLoop().submit(() -> b.sumOverCodecs(EagerCodec.class,
                    c -> c.reassemblies() + c.unexpectedQueued())).get(), run.ctx() + "eager receives left");
        } finally {
            b.close().get(10, TimeUnit.SECONDS); // fails the reusable receives
            for (Outcome o; (o = run.outcomes.poll()) != null; ) {
                if (o.data() != null) {
                    o.data().release();
                }
            }
            for (Reusable r : run.reusables) {
                if (r.into != null) {
                    r.into.release();
                }
            }
        }
        System.out.println("TagMatchingRandomTest " + tls + " " + setting + ": " + rounds + " rounds, "
                + run.msgs.size() + " messages, " + a.counters().snapshot());
    }

    /**
     * Rendezvous messages in flight (receives posted before some of them, into buffers of the user's or not) when the
     * sender's endpoint, the receiver's endpoint, or either worker closes at a random moment: every send and every
     * receive posted completes (a receive whose message never came is cancelled), what arrives is whole and right,
     * and nothing leaks.
     */
    @ParameterizedTest(name = "{0} {1}")
    @CsvSource({
        "self, -",
        "shm, -",
        "tcp, -",
        "'shm,cma', RNDV_SCHEME=get_zcopy;SHM_COPY_BW=1g",
        "'shm,cma', RNDV_SCHEME=put_zcopy;SHM_COPY_BW=1g",
    })
    void anEndpointOrWorkerClosedMidRendezvousSettlesEverySendAndReceive(String tls, String setting)
            throws Exception {
        if (tls.contains("cma")) {
            assumeTrue(Cma.availability().isAvailable(), () -> Cma.availability().reason());
        }
        long seed = SEED ^ (tls + setting).hashCode() ^ 0x5DEECE66DL;
        SplittableRandom rnd = new SplittableRandom(seed);
        String ctx = "[seed=" + seed + " (-Dtest.tag.seed=" + SEED + ") " + tls + " " + setting + "] ";
        String[] settings = TestWorkers.settings(tls, (setting.equals("-") ? "" : setting + ";")
                + "KEEPALIVE_INTERVAL=100ms;KEEPALIVE_TIMEOUT=1s");
        int cases = 3;
        for (int c = 0; c < cases; c++) {
            DefaultWorker a = workers.start("a" + c, settings);
            DefaultWorker b = workers.start("b" + c, settings);
            TestWorkers.Pair pair = TestWorkers.connected(a, b);
            int n = 2 + rnd.nextInt(4);
            int action = rnd.nextInt(4);
            String what = ctx + "case " + c + ", " + n + " messages, closing " + switch (action) {
                case 0 -> "the sender's endpoint";
                case 1 -> "the receiver's endpoint";
                case 2 -> "the receiving worker";
                default -> "the sending worker";
            } + ": ";
            List<ChannelFuture> sends = new ArrayList<>();
            List<Future<TagMessage>> recvs = new ArrayList<>();
            List<ByteBuf> intos = new ArrayList<>();
            int[] sizes = new int[n];
            try {
                for (int i = 0; i < n; i++) {
                    sizes[i] = (3 << 19) + rnd.nextInt(3 << 20);
                    if (rnd.nextInt(3) != 0) {
                        ByteBuf into = rnd.nextBoolean() ? null : ByteBufAllocator.DEFAULT.directBuffer(sizes[i]);
                        if (into != null) {
                            intos.add(into);
                        }
                        recvs.add(b.tagRecv(i, -1L, into));
                    } else {
                        recvs.add(null);
                    }
                }
                for (int i = 0; i < n; i++) {
                    long contentSeed = seed + i;
                    sends.add(pair.ab().tagSend(i, rnd.nextBoolean() ? TestWorkers.pattern(contentSeed, sizes[i])
                            : TestWorkers.directPattern(contentSeed, sizes[i])));
                }
                LockSupport.parkNanos(rnd.nextInt(3_000_000));
                Future<?> closed = switch (action) {
                    case 0 -> pair.ab().close();
                    case 1 -> pair.ba().close();
                    case 2 -> b.close();
                    default -> a.close();
                };
                assertTrue(closed.await(15, TimeUnit.SECONDS), what + "the close never completed");
                for (int i = 0; i < n; i++) {
                    ChannelFuture f = sends.get(i);
                    int at = i;
                    assertTrue(f.await(15, TimeUnit.SECONDS), () -> what + "send " + at + " (" + sizes[at]
                            + " B) never completed");
                }
                long settled = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
                for (int i = 0; i < n; i++) {
                    Future<TagMessage> r = recvs.get(i);
                    if (r == null) {
                        continue;
                    }
                    int at = i;
                    // A receive whose message never left (its sender ended first) waits: cancelled then.
                    if (!r.await(Math.max(0, settled - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                        // Not cancellable once its data are coming: a slow machine may still be taking them in.
                        assertTrue(r.cancel(false) || r.await(15, TimeUnit.SECONDS), () -> what + "receive " + at
                                + " (" + sizes[at] + " B) neither completed nor could be cancelled: its data stopped"
                                + " coming");
                    }
                    if (r.isSuccess()) {
                        TagMessage m = r.getNow();
                        try {
                            assertEquals(i, m.tag(), what + "tag");
                            assertContent(what + "receive " + i, seed + i, sizes[i], m.content());
                        } finally {
                            m.release();
                        }
                        // The receiver's side ending may drop its ATS: a send may then fail although its data came.
                        assertTrue(sends.get(i).isSuccess() || action >= 1, () -> what + "receive " + at
                                + " got its message, yet its send failed: " + sends.get(at).cause());
                    }
                }
                if (action < 2) {
                    TestWorkers.awaitOnLoop(b, () -> b.unexpectedCount() == 0 && b.heldReceives() == 0,
                            what + "the ended endpoint left messages waiting or receives held");
                }
            } finally {
                a.close().get(10, TimeUnit.SECONDS);
                b.close().get(10, TimeUnit.SECONDS);
                intos.forEach(ByteBuf::release);
            }
        }
    }

    /** One round: sends and posts interleaved at random, then the leftovers drained and everything checked. */
    private void round(Run run) throws Exception {
        SplittableRandom rnd = run.rnd;
        int count = 3 + rnd.nextInt(22);
        List<Msg> msgs = new ArrayList<>();
        int large = 0;
        for (int i = 0; i < count; i++) {
            int size = randomSize(rnd, run.sizes);
            if (size > (1 << 20) && ++large > 2) {
                size = rnd.nextInt(70_000);
            }
            long tag = randomTag(rnd);
            while (run.byTagSize.containsKey(tag + ":" + size)) {
                size = size >= MAX_SIZE ? size - 1 - rnd.nextInt(1000) : size + 1;
            }
            int sender = rnd.nextInt(2);
            String how = switch (rnd.nextInt(10)) {
                case 0, 1 -> "sync";
                case 2 -> size <= 2048 ? "short" : "direct";
                case 3, 4, 5 -> "direct";
                default -> "heap";
            };
            Msg m = new Msg(run.msgs.size(), sender, run.senderSeq[sender]++, tag, size, how);
            run.msgs.add(m);
            msgs.add(m);
            run.byTagSize.put(tag + ":" + size, m);
        }
        int roundMax = msgs.stream().mapToInt(m -> m.size).max().orElse(0);
        List<Post> posts = new ArrayList<>();
        int nextMsg = 0;
        int receives = count + rnd.nextInt(3) - 1;
        for (int done = 0; nextMsg < count || done < receives; ) {
            int op = rnd.nextInt(10);
            if (nextMsg < count && (done >= receives || op < 5)) {
                send(run, msgs.get(nextMsg++));
            } else if (done < receives) {
                Msg like = msgs.get(rnd.nextInt(count));
                long mask = randomMask(rnd);
                long tag = like.tag ^ (rnd.nextLong() & ~mask);
                ByteBuf into = null;
                int k = rnd.nextInt(10);
                if (k < 4) {
                    int cap = k == 0 ? rnd.nextInt(Math.max(1, roundMax / 2 + 1)) : roundMax + rnd.nextInt(16);
                    into = rnd.nextBoolean() ? ByteBufAllocator.DEFAULT.directBuffer(cap + 3, cap + 3)
                            : Unpooled.buffer(cap + 3, cap + 3);
                    into.writeBytes(new byte[] {1, 2, 3}, 0, rnd.nextInt(4));
                }
                posts.add(post(run, tag, mask, into));
                done++;
                if (rnd.nextInt(12) == 0) { // cancelled right away: it may have taken a message already
                    Post p = posts.get(posts.size() - 1);
                    run.b.eventLoop().execute(() -> p.promise.cancel(false));
                }
            }
            if (rnd.nextInt(8) == 0) {
                Thread.sleep(0, 200_000); // arrivals meanwhile: later posts find them unexpected
            } else if (rnd.nextInt(20) == 0) {
                settle(run);
            }
            if (rnd.nextInt(15) == 0) {
                onLoop(run, () -> run.reusables.stream().filter(r -> r.idle).forEach(Reusable::post));
            }
        }
        // One that nothing matches, cancelled at the end of the round.
        posts.add(post(run, 0x7777_0000_0000_0000L, -1L, null));
        run.pending.addAll(posts);
        quiesce(run);
        // Drain what no receive took, cancel the receives nothing took.
        int left = run.b.eventLoop().submit(run.b::unexpectedCount).get(10, TimeUnit.SECONDS);
        for (int i = 0; i < left; i++) {
            run.pending.add(post(run, 0, 0, null));
        }
        settle(run);
        awaitPostsDone(run, left);
        onLoop(run, () -> {
        });
        for (Post p : run.pending) {
            if (!p.promise.isDone()) {
                assertTrue(p.promise.cancel(false) || p.promise.isDone(), run.ctx() + p + " could not be cancelled");
            }
        }
        onLoop(run, () -> {
        }); // the cancellations' listeners ran
        for (Post p : run.pending) {
            Future<TagMessage> f = p.promise;
            assertTrue(f.isDone(), run.ctx() + p + " not done");
            if (f.isCancelled() && p.into != null) {
                assertEquals(p.intoStart, p.into.writerIndex(), run.ctx() + p + " cancelled, its buffer written");
            }
        }
        check(run, msgs);
        for (Post p : run.pending) {
            if (p.into != null) {
                p.into.release();
            }
        }
        run.pending.clear();
    }

    /** Posts a promise's receive on the receiver's loop, numbered there; its outcome recorded. */
    private static Post post(Run run, long tag, long mask, ByteBuf into) throws Exception {
        Post[] made = new Post[1];
        CountDownLatch numbered = new CountDownLatch(1);
        run.b.eventLoop().execute(() -> {
            Post p = new Post(run.postSeq++, tag, mask, into == null ? "promise" : "promise-into", into);
            made[0] = p;
            numbered.countDown();
            Future<TagMessage> f = run.b.tagRecv(tag, mask, into);
            p.promise = f;
            f.addListener(x -> {
                if (x.isSuccess()) {
                    TagMessage m = (TagMessage) x.getNow();
                    run.outcomes.add(new Outcome(p, m.tag(), m.content(), null));
                } else if (!x.isCancelled()) {
                    run.outcomes.add(new Outcome(p, 0, null, x.cause()));
                }
            });
        });
        assertTrue(numbered.await(10, TimeUnit.SECONDS), run.ctx() + "post");
        while (made[0].promise == null) {
            Thread.onSpinWait();
        }
        return made[0];
    }

    private static void send(Run run, Msg m) throws Exception {
        long contentSeed = run.seed * 1_000_003 + m.id;
        Endpoint ep = run.eps[m.sender];
        switch (m.how) {
            case "sync" -> m.send = ep.tagSendSync(m.tag, TestWorkers.pattern(contentSeed, m.size));
            case "short" -> {
                ByteBuf data = TestWorkers.pattern(contentSeed, m.size);
                m.send = ep.eventLoop().submit(() -> {
                    if (ep.trySendShort(m.tag, data)) {
                        data.release();
                        return ep.newSucceededFuture();
                    }
                    return ep.tagSend(m.tag, data);
                }).get(10, TimeUnit.SECONDS);
            }
            case "direct" -> m.send = ep.tagSend(m.tag, TestWorkers.directPattern(contentSeed, m.size));
            default -> m.send = ep.tagSend(m.tag, TestWorkers.pattern(contentSeed, m.size));
        }
    }

    /** Waits until every message sent is taken by a receive or waits unexpected, and nothing more is arriving. */
    private static void quiesce(Run run) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
        while (true) {
            int unexpected = run.b.eventLoop().submit(run.b::unexpectedCount).get(10, TimeUnit.SECONDS);
            Set<Integer> taken = new HashSet<>();
            for (Outcome o : run.outcomes) {
                Msg m = identify(run, o);
                if (m != null) {
                    taken.add(m.id);
                }
            }
            long previous = run.msgs.stream().filter(m -> !m.takenBy.isEmpty()).count();
            if (taken.size() + previous + unexpected >= run.msgs.size()) {
                return;
            }
            if (System.nanoTime() > deadline) {
                fail(run.ctx() + "messages neither received nor waiting: " + run.msgs.stream()
                        .filter(m -> m.takenBy.isEmpty() && !taken.contains(m.id)).toList() + "; " + unexpected
                        + " unexpected; receives pending " + run.pending.stream()
                        .filter(p -> !p.promise.isDone()).toList());
            }
            Thread.sleep(2);
        }
    }

    private static void awaitPostsDone(Run run, int drains) throws Exception {
        List<Post> drainPosts = run.pending.subList(run.pending.size() - drains, run.pending.size());
        for (Post p : drainPosts) {
            assertTrue(p.promise.await(15, TimeUnit.SECONDS), run.ctx() + p + " took nothing of what waited");
        }
    }

    /** The message an outcome names: by tag and size (unique in a run), from its data or its truncation. */
    private static Msg identify(Run run, Outcome o) {
        if (o.data() != null) {
            return run.byTagSize.get(o.tag() + ":" + o.data().readableBytes());
        }
        if (o.failure() instanceof MessageTruncatedException t) {
            return run.byTagSize.get(t.tag() + ":" + t.length());
        }
        return null;
    }

    /** Checks the round's outcomes, its sends, and the order of the run's messages so far. */
    private static void check(Run run, List<Msg> roundMsgs) throws Exception {
        String ctx = run.ctx();
        Map<Long, Msg> byPost = new HashMap<>();
        Map<Long, Post> posts = new HashMap<>();
        for (Outcome polled; (polled = run.outcomes.poll()) != null; ) {
            Outcome o = polled;
            Post p = o.post();
            try {
                Msg m = identify(run, o);
                if (o.failure() != null && !(o.failure() instanceof MessageTruncatedException)) {
                    throw new AssertionError(ctx + p + " failed", o.failure());
                }
                assertNotNull(m, () -> ctx + p + " got a message nobody sent: tag 0x" + Long.toHexString(o.tag())
                        + " " + (o.data() == null ? null : o.data().readableBytes()) + " B");
                assertTrue(p.matches(m.tag), () -> ctx + p + " got " + m + ", which it does not match");
                if (o.data() != null) {
                    assertEquals(m.tag, o.tag(), ctx + p + " tag");
                    assertTrue(m.size <= p.capacity, () -> ctx + p + " got " + m + ", larger than its buffer");
                    assertContent(ctx + p + " got " + m, run.seed * 1_000_003 + m.id, m.size, o.data());
                    if (p.into != null && p.kind.equals("promise-into")) {
                        assertEquals(p.intoStart + m.size, p.into.writerIndex(), ctx + p + " writer index, " + m);
                        assertContent(ctx + p + " buffer of " + m, run.seed * 1_000_003 + m.id, m.size,
                                p.into.slice(p.intoStart, m.size));
                    }
                } else {
                    m.truncated = true;
                    assertTrue(m.size > p.capacity, () -> ctx + p + " failed truncated for " + m);
                    if (p.kind.equals("promise-into")) {
                        assertEquals(p.intoStart, p.into.writerIndex(), ctx + p + " truncated, yet written");
                    }
                }
                m.takenBy.add(p.seq);
                assertEquals(1, m.takenBy.size(), () -> ctx + m + " taken by " + m.takenBy.size()
                        + " receives: posts " + m.takenBy);
                assertTrue(byPost.put(p.seq, m) == null, () -> ctx + p + " took two messages");
                posts.put(p.seq, p);
            } finally {
                if (o.data() != null) {
                    o.data().release();
                }
            }
        }
        for (Msg m : roundMsgs) {
            assertEquals(1, m.takenBy.size(), () -> ctx + m + " taken by " + m.takenBy);
            assertTrue(m.send.await(15, TimeUnit.SECONDS), () -> ctx + m + ": its send never completed");
            if (!m.send.isSuccess()) {
                assertTrue(m.truncated && m.send.cause() instanceof MessageTruncatedException,
                        () -> ctx + m + ": its send failed: " + m.send.cause());
            }
        }
        // Sender order: for the receive that took message j of a sender, each earlier message of that sender which
        // the receive also matches was taken by a receive posted before it.
        for (Map.Entry<Long, Msg> e : byPost.entrySet()) {
            Post p = posts.get(e.getKey());
            Msg mj = e.getValue();
            for (Msg mi : run.msgs) {
                if (mi.sender == mj.sender && mi.senderSeq < mj.senderSeq && p.matches(mi.tag)) {
                    long by = mi.takenBy.isEmpty() ? -1 : mi.takenBy.get(0);
                    assertTrue(by >= 0 && by < p.seq, () -> ctx + p + " took " + mj + " although earlier " + mi
                            + " of its sender, which it matches too, was taken by post#" + by);
                }
            }
        }
    }

    private static void assertContent(String what, long seed, int length, ByteBuf actual) {
        assertEquals(length, actual.readableBytes(), what + ": length");
        byte[] expected = new byte[length];
        new SplittableRandom(seed).nextBytes(expected);
        byte[] got = new byte[length];
        actual.getBytes(actual.readerIndex(), got);
        int at = Arrays.mismatch(expected, got);
        assertTrue(at < 0, () -> what + ": content differs at byte " + at);
    }

    /** Waits until the receiver's loop ran what was queued before (arrivals read so far handled). */
    private static void settle(Run run) throws Exception {
        run.b.eventLoop().submit(() -> {
        }).get(10, TimeUnit.SECONDS);
    }

    private static void onLoop(Run run, Runnable r) throws Exception {
        run.b.eventLoop().submit(r).get(10, TimeUnit.SECONDS);
    }

    /** Tags: a channel (0 to 3), a group bit, sometimes high bits; masks pick some of them. */
    private static long randomTag(SplittableRandom rnd) {
        return rnd.nextInt(4) | ((long) rnd.nextInt(2) << 8) | (rnd.nextInt(4) == 0 ? HIGH : 0);
    }

    private static long randomMask(SplittableRandom rnd) {
        return switch (rnd.nextInt(10)) {
            case 0, 1, 2, 3 -> -1L;
            case 4 -> 0L;
            case 5 -> 0xFFL;
            case 6 -> ~0x100L;
            case 7 -> 0x3L | HIGH;
            case 8 -> 0x1L;
            default -> rnd.nextLong();
        };
    }

    /** Mostly a boundary of the protocol table or a fragment size, plus or minus a little; else anything. */
    private static int randomSize(SplittableRandom rnd, List<Integer> boundaries) {
        int k = rnd.nextInt(10);
        if (k < 5) {
            int b = boundaries.get(rnd.nextInt(boundaries.size()));
            return Math.max(0, Math.min(MAX_SIZE, b + rnd.nextInt(5) - 2));
        }
        if (k < 8) {
            return rnd.nextInt(4096);
        }
        return rnd.nextInt(k == 8 ? 300_000 : MAX_SIZE + 1);
    }

    /** Every boundary of a's tables toward b, the fragment sizes of the transports, and eager's limits. */
    private static List<Integer> boundaries(DefaultWorker a, DefaultWorker b) throws Exception {
        TreeSet<Integer> sizes = new TreeSet<>(List.of(0, 1, 8, 64 << 10, 128 << 10, 1 << 20, 2 << 20, MAX_SIZE));
        for (SelectionKey.MemoryType mem : new SelectionKey.MemoryType[] {SelectionKey.MemoryType.HEAP,
                SelectionKey.MemoryType.DIRECT}) {
            ProtoTable t = a.protocolTable(b.address(), mem);
            for (ProtoTable.Entry e : t.entries()) {
                if (e.start() >= 0 && e.start() <= MAX_SIZE) {
                    sizes.add((int) e.start());
                }
            }
        }
        return new ArrayList<>(sizes);
    }
}
