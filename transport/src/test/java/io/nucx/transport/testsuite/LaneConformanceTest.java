package io.nucx.transport.testsuite;

import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.handler.codec.DecoderException;
import io.netty.handler.codec.TooLongFrameException;
import io.nucx.transport.AbstractIface;
import io.nucx.transport.AbstractLaneChannel;
import io.nucx.transport.AmFrame;
import io.nucx.transport.Iface;
import io.nucx.transport.IfaceAttributes;
import io.nucx.transport.IfaceParams;
import io.nucx.transport.NucxConfig;
import io.nucx.transport.Transport;
import io.nucx.transport.Transports;
import io.nucx.transport.shm.ShmIoHandler;
import io.nucx.transport.shm.ShmTransport;
import io.nucx.transport.IoEngine;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.channels.ClosedChannelException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The transport conformance suite for active-message lanes, written once and run by every transport (a subclass per
 * transport and engine, as Netty's testsuite subclasses {@code SocketEchoTest} and UCX's
 * {@code UCP_INSTANTIATE_TEST_CASE} instantiates a test over every transport). Two ifaces, each on its own event loop,
 * and for transports that cross processes a second JVM ({@link LanePeer}).
 *
 * <p>What every lane must do: deliver frames in order and intact, both ways at once; carry every frame size at each
 * boundary its iface declares (max short, the copy threshold, max bcopy), headers from empty to the maximum; refuse a
 * frame over its limits on the sender's side with a clear error, that write only; hold a writer back behind a slow
 * reader (the writer turns unwritable, then writable again) and lose nothing; deliver what was written before a close
 * from either side, then end, and fail later writes; and when the peer process dies mid-stream, fail the writes
 * waiting for it and end the lane with an intact prefix of what it sent. Every buffer is released (the leak detector
 * runs at PARANOID). Waits have deadlines; nothing sleeps and then asserts that nothing happened.
 */
@Timeout(180)
public abstract class LaneConformanceTest {

    /** How many numbered frames the ordering and cross-process tests send each way. */
    protected static final int FRAMES = 3000;

    private final String transportName;
    private final IoEngine engine;
    private final boolean crossProcess;

    /**
     * @param transportName the transport under test
     * @param engine        the engine of both loops (shm wraps it in a {@link ShmIoHandler})
     * @param crossProcess  whether lanes cross processes, so the peer-process cases run ({@link LanePeer})
     */
    protected LaneConformanceTest(String transportName, IoEngine engine, boolean crossProcess) {
        this.transportName = transportName;
        this.engine = engine;
        this.crossProcess = crossProcess;
    }

    protected final String transportName() {
        return transportName;
    }

    protected final IoEngine engine() {
        return engine;
    }

    private boolean crossProcess() {
        return crossProcess;
    }

    /** Settings of both ifaces (and of a peer process), e.g. {@code TCP_CONNECT=p2p}. */
    protected Map<String, String> config() {
        return Map.of();
    }

    /** Checks after a peer process was killed and its lane ended (shm: no files of it are left). */
    protected void afterPeerKilled(long pid) throws Exception {
    }

    /**
     * Checks the write that waited for a killed reader. Here: it ended, failed with an I/O error or succeeded (tcp
     * completes a write once the kernel took it, which it may do after the peer died: RST frees the send buffer).
     * Transports whose writes wait for the reader's room say more (shm: it fails naming the pid).
     */
    protected void checkWriteToKilledPeer(ChannelFuture held, long pid) {
        if (!held.isSuccess()) {
            assertInstanceOf(IOException.class, held.cause());
        }
    }

    /** The loops' I/O engine for {@code transport} on {@code engine}. */
    static IoHandlerFactory factory(String transport, IoEngine engine) {
        return transport.equals(ShmTransport.NAME) ? ShmIoHandler.newFactory(engine.ioHandlerFactory(), 20_000)
                : engine.ioHandlerFactory();
    }

    /** The engine of this suite's loops; a transport's suite may run on another (self on a polling loop). */
    protected IoHandlerFactory loopFactory() {
        return factory(transportName(), engine());
    }

    /** One lane: its two ends and what each end saw. */
    protected record Lane(Channel a, Recorder aSide, Channel b, Recorder bSide) {
    }

    private final List<EventLoopGroup> groups = new ArrayList<>();
    private final List<Iface> ifaces = new ArrayList<>();
    private final List<Channel> channels = new ArrayList<>();
    private final List<Recorder> recorders = new ArrayList<>();
    private final List<Process> peers = new ArrayList<>();
    /** The recorders the next lanes accepted by iface b get, in order. */
    private final BlockingQueue<Recorder> acceptedB = new LinkedBlockingQueue<>();
    private Transport transport;
    private NucxConfig nucxConfig;
    /** Iface a dials, iface b is dialled. */
    protected Iface a;
    protected Iface b;

    @BeforeEach
    void open() throws Exception {
        assumeTrue(engine().availability().isAvailable(), () -> engine().availability().reason());
        transport = Transports.all().stream().filter(t -> t.name().equals(transportName())).findFirst()
                .orElseThrow(() -> new AssertionError("no transport " + transportName()));
        assumeTrue(transport.availability().isAvailable(), () -> transport.availability().reason());
        nucxConfig = NucxConfig.of(config(), Map.of());
        a = openIface(() -> {
            Recorder r = new Recorder();
            recorders.add(r);
            return r;
        });
        b = openIface(() -> {
            Recorder r = acceptedB.poll();
            if (r == null) {
                r = new Recorder();
            }
            recorders.add(r);
            return r;
        });
    }

    private Iface openIface(Supplier<ChannelHandler> accepted) throws Exception {
        EventLoopGroup g = new MultiThreadIoEventLoopGroup(1, loopFactory());
        groups.add(g);
        EventLoop loop = g.next();
        // Off the loop, as a worker does: an iface may wait for its listening socket to bind.
        Iface i = transport.openIface(new IfaceParams(loop, transport.defaultDevice(nucxConfig), accepted,
                nucxConfig));
        ifaces.add(i);
        return i;
    }

    @AfterEach
    void close() throws Exception {
        for (Process p : peers) {
            p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
        for (Channel ch : channels) {
            ch.close().await(10, TimeUnit.SECONDS);
        }
        for (Iface i : ifaces) {
            i.close().await(10, TimeUnit.SECONDS);
        }
        for (EventLoopGroup g : groups) {
            g.shutdownGracefully(0, 1, TimeUnit.SECONDS).await(10, TimeUnit.SECONDS);
        }
        recorders.forEach(Recorder::releaseAll);
    }

    /** Runs {@code task} on {@code iface}'s loop (p2p endpoints are made there). */
    protected static <T> T onLoop(Iface iface, Callable<T> task) throws Exception {
        return ((AbstractIface) iface).eventLoop().submit(task).get(30, TimeUnit.SECONDS);
    }

    /**
     * Connects a lane from {@code a} to {@code b} whose ends report to {@code aSide} and {@code bSide}:
     * connect-to-iface here (b's end is the lane b accepts); p2p transports override it.
     */
    protected ChannelFuture connect(Iface from, Iface to, Recorder aSide, Recorder bSide) throws Exception {
        acceptedB.add(bSide);
        return onLoop(from, () -> from.connect(to.deviceAddress(), to.ifaceAddress(), aSide));
    }

    /** A lane from a to b; b's end starts reading at once, or only when told ({@code bReads} false). */
    protected Lane lane(boolean bReads) throws Exception {
        Recorder aSide = new Recorder();
        Recorder bSide = new Recorder(bReads);
        recorders.add(aSide);
        recorders.add(bSide);
        Channel ca = connect(a, b, aSide, bSide).sync().channel();
        channels.add(ca);
        Channel cb = bSide.channel();
        channels.add(cb);
        assertTrue(ca.isActive() && cb.isActive());
        return new Lane(ca, aSide, cb, bSide);
    }

    /**
     * Writes numbered frames from {@code from} on the lane's own loop (so writability changes as it writes) until it
     * turns unwritable; returns the writes.
     */
    private static List<ChannelFuture> fillUntilUnwritable(Channel ch, long from) throws Exception {
        return ch.eventLoop().submit(() -> {
            List<ChannelFuture> writes = new ArrayList<>();
            long bytes = 0;
            while (ch.isWritable()) {
                AmFrame f = Frames.numbered(from + writes.size());
                bytes += f.length();
                writes.add(ch.writeAndFlush(f));
                if (bytes > 1L << 30) {
                    throw new AssertionError("still writable after " + writes.size() + " frames, " + bytes
                            + " bytes: the reader never held the writer back");
                }
            }
            return writes;
        }).get(120, TimeUnit.SECONDS);
    }

    private static ChannelFuture awaited(ChannelFuture f) throws InterruptedException {
        assertTrue(f.await(Recorder.DEADLINE_SECONDS, TimeUnit.SECONDS), () -> "write not done: " + f.channel());
        return f;
    }

    // ---------------------------------------------------------------- order and sizes

    @Test
    void framesArriveInOrderAndIntactBothWaysAtOnce() throws Exception {
        Lane l = lane(true);
        ChannelFuture lastA = null;
        ChannelFuture lastB = null;
        for (long s = 0; s < FRAMES; s++) {
            lastA = l.a().write(Frames.numbered(s));
            lastB = l.b().write(Frames.numbered(s));
            if (s % 64 == 63) {
                l.a().flush();
                l.b().flush();
            }
        }
        l.a().flush();
        l.b().flush();
        l.bSide().expect(0, FRAMES);
        l.aSide().expect(0, FRAMES);
        assertTrue(awaited(lastA).isSuccess() && awaited(lastB).isSuccess());
        l.aSide().assertDrained();
        l.bSide().assertDrained();
    }

    /**
     * Every frame length at each boundary the iface declares (max short, the copy threshold, max bcopy: one below, at,
     * one above where that is still allowed), each with an empty, an 8-byte and a maximal header, heap and direct.
     */
    @Test
    void everyFrameSizeAtEveryBoundaryOfTheIfaceArrivesIntact() throws Exception {
        IfaceAttributes at = a.attributes();
        int max = at.maxBcopy();
        TreeSet<Integer> lengths = new TreeSet<>(List.of(0, 1, max - 1, max));
        for (long boundary : new long[] {at.maxShort(), at.amCopyMax()}) {
            for (long n = boundary - 1; n <= boundary + 1; n++) {
                if (n >= 0 && n <= max) {
                    lengths.add((int) n);
                }
            }
        }
        Lane l = lane(true);
        record Sent(int seed, int header, int payload) {
        }
        List<Sent> sent = new ArrayList<>();
        List<ChannelFuture> writes = new ArrayList<>();
        for (int length : lengths) {
            for (int header : new int[] {0, 8, at.maxHeader()}) {
                if (header > length) {
                    continue;
                }
                for (boolean direct : new boolean[] {false, true}) {
                    Sent s = new Sent(sent.size(), header, length - header);
                    sent.add(s);
                    writes.add(l.a().writeAndFlush(Frames.sized(s.seed(), s.header(), s.payload(), direct)));
                }
            }
        }
        for (Sent s : sent) {
            AmFrame f = l.bSide().poll();
            assertNotNull(f, () -> "frame of " + (s.header() + s.payload()) + " bytes (header " + s.header()
                    + ") did not arrive");
            try {
                assertNull(Frames.checkSized(f, s.seed(), s.header(), s.payload()));
            } finally {
                f.release();
            }
        }
        for (ChannelFuture w : writes) {
            assertTrue(awaited(w).isSuccess(), () -> "write failed: " + w.cause());
        }
        l.bSide().assertDrained();
    }

    /**
     * {@link AbstractLaneChannel#writeNow} (the small-message path below the pipeline) keeps the lane's order with
     * ordinary writes: it refuses, leaving the frame to the caller, off the loop, while a write is queued ahead and
     * while an outbound handler sits in the pipeline; shm and self take the rest, and a short frame given as a
     * number and a payload ({@link AbstractLaneChannel#writeShortNow}), each seen by the peer after the next flush, as a
     * written message is in Netty. Everything arrives in order, intact.
     */
    @Test
    void anImmediateWriteKeepsTheLanesOrderAndRefusesWhatItMustNotTake() throws Exception {
        Lane l = lane(true);
        assumeTrue(l.a() instanceof AbstractLaneChannel, "tcp lanes are Netty's socket channels");
        AbstractLaneChannel ch = (AbstractLaneChannel) l.a();
        AmFrame first = Frames.numbered(0);
        assertFalse(ch.writeNow(first), "off the loop");
        List<Boolean> taken = ch.eventLoop().submit(() -> {
            List<Boolean> t = new ArrayList<>();
            ch.write(first); // queued, not flushed
            for (long s = 1; s <= 3; s++) {
                if (s == 2) {
                    ch.flush();
                } else if (s == 3) {
                    ch.pipeline().addFirst("probe", new ChannelOutboundHandlerAdapter());
                }
                AmFrame f = Frames.numbered(s);
                boolean now = ch.writeNow(f);
                t.add(now);
                if (!now) {
                    ch.writeAndFlush(f);
                }
            }
            ch.pipeline().remove("probe");
            AmFrame f = Frames.numbered(4); // the same frame as a number and a payload: UCT's am_short
            boolean now = ch.writeShortNow(f.amId(), f.header().getLongLE(f.header().readerIndex()), f.payload());
            t.add(now);
            if (now) {
                f.release(); // copied
                ch.flush(); // an immediate write is in the transport; the flush after it publishes it (shm's tail)
            } else {
                ch.writeAndFlush(f);
            }
            return t;
        }).get(30, TimeUnit.SECONDS);
        boolean immediate = transportName().equals(ShmTransport.NAME) || transportName().equals("self");
        assertEquals(List.of(false, immediate, false, immediate), taken,
                "queued ahead, free, behind an outbound handler, short");
        l.bSide().expect(0, 5);
        l.bSide().assertDrained();
    }

    /**
     * A frame over the limits fails its own write with a clear error; nothing of it arrives; the lane goes on. Written
     * with a void promise, the lane's pipeline hears of it (its handler would close the lane): Netty drops a void
     * promise's failure where a channel filters its messages, and the writer would never learn the frame was lost.
     */
    @Test
    void aFrameOverTheIfaceLimitsIsRefusedWithAClearErrorAndTheLaneGoesOn() throws Exception {
        IfaceAttributes at = a.attributes();
        Lane l = lane(true);
        ChannelFuture tooLong = awaited(l.a().writeAndFlush(Frames.sized(1, 8, at.maxBcopy() - 7, true)));
        TooLongFrameException e = assertInstanceOf(TooLongFrameException.class, tooLong.cause());
        assertTrue(e.getMessage().contains((at.maxBcopy() + 1) + " bytes")
                && e.getMessage().contains(Integer.toString(at.maxBcopy())), e.getMessage());
        ChannelFuture header = awaited(l.a().writeAndFlush(Frames.sized(2, at.maxHeader() + 1, 0, false)));
        TooLongFrameException h = assertInstanceOf(TooLongFrameException.class, header.cause());
        assertTrue(h.getMessage().contains("header <= " + at.maxHeader()), h.getMessage());
        assertInstanceOf(UnsupportedOperationException.class, awaited(l.a().writeAndFlush("not a frame")).cause());
        long heard = tooLongHeard(l.aSide());
        l.a().writeAndFlush(Frames.sized(3, 8, at.maxBcopy() - 7, true), l.a().voidPromise());
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(Recorder.DEADLINE_SECONDS);
        while (tooLongHeard(l.aSide()) == heard && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        assertEquals(heard + 1, tooLongHeard(l.aSide()), () -> "the pipeline heard: " + l.aSide().errors());
        assertTrue(l.a().isActive(), "the lane stays up");
        l.a().writeAndFlush(Frames.numbered(7));
        l.bSide().expect(7, 1);
        l.bSide().assertDrained();
    }

    private static long tooLongHeard(Recorder r) {
        return r.errors().stream().filter(TooLongFrameException.class::isInstance).count();
    }

    // ---------------------------------------------------------------- backpressure

    /**
     * b's end does not read: a's frames pile up (in the transport, then in a's outbound buffer) until a turns
     * unwritable. Once b reads, every frame arrives in order, every write completes and a turns writable again. (How
     * long a stays unwritable is the transport's: io_uring's kernel may take more while nobody reads.)
     */
    @Test
    void aSlowReaderMakesTheWriterUnwritableAndNothingIsLost() throws Exception {
        Lane l = lane(false);
        List<ChannelFuture> writes = fillUntilUnwritable(l.a(), 0);
        l.aSide().awaitWritability(false);
        l.b().config().setAutoRead(true);
        l.bSide().expect(0, writes.size());
        for (ChannelFuture w : writes) {
            assertTrue(awaited(w).isSuccess(), () -> "write failed: " + w.cause());
        }
        l.aSide().awaitWritability(true);
        assertTrue(l.a().isWritable());
        l.bSide().assertDrained();
    }

    /**
     * A reader that starts late finds a long queue of small frames, which the writer refills as it drains: the reader
     * takes them in batches, each delivered from its loop (or a task), none from within the end of the batch before
     * (auto-read's {@code read()} reading at once), which nests batches for as long as the writer keeps up, until the
     * stack overflows: a fast writer on self did so within seconds, and the lane stopped reading.
     */
    @Test
    void aLongQueueIsReadInBatchesThatDoNotNest() throws Exception {
        Lane l = lane(false);
        int n = 20_000;
        ChannelFuture last = l.a().eventLoop().submit(() -> {
            ChannelFuture f = null;
            for (int i = 0; i < n; i++) {
                f = l.a().write(Frames.sized(i, 8, 8, i % 2 == 1));
                if (i % 64 == 63) {
                    l.a().flush();
                }
            }
            l.a().flush();
            return f;
        }).get(30, TimeUnit.SECONDS);
        l.b().config().setAutoRead(true);
        for (int i = 0; i < n; i++) {
            AmFrame f = l.bSide().poll();
            assertNotNull(f, "frame " + i + " of " + n + " did not arrive");
            try {
                assertNull(Frames.checkSized(f, i, 8, 8), "frame " + i);
            } finally {
                f.release();
            }
        }
        assertTrue(awaited(last).isSuccess(), () -> "write failed: " + last.cause());
        int nesting = l.b().eventLoop().submit(l.bSide()::readNesting).get(10, TimeUnit.SECONDS);
        assertTrue(nesting < 40, () -> n + " frames delivered at stack depths up to " + nesting
                + " frames apart: read batches nest");
        l.bSide().assertDrained();
    }

    // ---------------------------------------------------------------- close

    /** The writer closes right after its writes completed: they all arrive first, then the reader's end ends. */
    @Test
    void aCloseFromTheWriterDeliversWhatWasWrittenThenEndsTheLane() throws Exception {
        Lane l = lane(true);
        ChannelFuture last = null;
        for (long s = 0; s < 500; s++) {
            last = l.a().writeAndFlush(Frames.numbered(s));
        }
        assertTrue(awaited(last).isSuccess());
        l.a().close().sync();
        l.bSide().expect(0, 500);
        l.bSide().awaitInactive();
        assertInstanceOf(ClosedChannelException.class, awaited(l.a().writeAndFlush(Frames.numbered(1))).cause());
        assertFalse(awaited(l.b().writeAndFlush(Frames.numbered(2))).isSuccess(), "the other end is closed too");
        l.bSide().assertDrained();
    }

    /** The reader closes while frames wait for it: the writer's end ends; its writes fail or complete, none hangs. */
    @Test
    void aCloseFromTheReaderEndsTheWritersEndAndNoWriteHangs() throws Exception {
        Lane l = lane(false);
        List<ChannelFuture> writes = fillUntilUnwritable(l.a(), 0);
        l.b().close().sync();
        l.aSide().awaitInactive();
        for (ChannelFuture w : writes) {
            awaited(w); // failed, or completed where the transport had handed it over (a socket's kernel buffer)
        }
        assertFalse(awaited(l.a().writeAndFlush(Frames.numbered(0))).isSuccess());
        l.bSide().releaseAll(); // whatever it read before its close
    }

    // ---------------------------------------------------------------- a peer process

    private record Peer(Process process, BufferedReader out, byte[] device, byte[] iface) {
        String awaitLine(String prefix) throws Exception {
            CompletableFuture<String> line = CompletableFuture.supplyAsync(() -> {
                try {
                    for (String s; (s = out.readLine()) != null; ) {
                        if (s.startsWith(prefix) || s.startsWith("BAD")) {
                            return s;
                        }
                    }
                    return "EOF";
                } catch (IOException e) {
                    return "EOF " + e;
                }
            });
            return line.get(120, TimeUnit.SECONDS);
        }

        void kill() throws Exception {
            process.destroyForcibly();
            assertTrue(process.waitFor(30, TimeUnit.SECONDS));
        }
    }

    private Peer startPeer(String mode, long expected) throws Exception {
        String java = ProcessHandle.current().info().command().orElseThrow();
        List<String> cmd = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED",
                "--sun-misc-unsafe-memory-access=allow", "-Dio.netty.leakDetection.level=paranoid"));
        for (Map.Entry<String, String> e : config().entrySet()) {
            cmd.add("-Dnucx." + e.getKey().toLowerCase(Locale.ROOT).replace('_', '.') + "=" + e.getValue());
        }
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), LanePeer.class.getName(), transportName(),
                engine().name(), mode, Long.toString(expected)));
        Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        peers.add(p);
        BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        String[] address = new Peer(p, out, null, null).awaitLine("ADDRESS").split(" ", -1);
        assertEquals(3, address.length, () -> "peer said " + String.join(" ", address));
        return new Peer(p, out, HexFormat.of().parseHex(address[1]), HexFormat.of().parseHex(address[2]));
    }

    /** A lane from iface a to the peer process. */
    private Lane laneTo(Peer peer) throws Exception {
        Recorder mine = new Recorder();
        recorders.add(mine);
        Channel ch = onLoop(a, () -> a.connect(peer.device(), peer.iface(), mine)).sync().channel();
        channels.add(ch);
        return new Lane(ch, mine, null, null);
    }

    /** A writer far faster than a reader in another process is held back by the lane, and loses nothing. */
    @Test
    void aWriterFasterThanAPeerProcessIsHeldBackAndLosesNothing() throws Exception {
        assumeTrue(crossProcess(), "in-process transport");
        int count = 20_000;
        Peer peer = startPeer("slow", count);
        Lane l = laneTo(peer);
        ChannelFuture last = null;
        int heldBack = 0;
        for (long s = 0; s < count; s++) {
            last = l.a().writeAndFlush(Frames.numbered(s));
            while (!l.a().isWritable()) {
                heldBack++;
                l.aSide().awaitWritability(true);
            }
        }
        assertTrue(awaited(last).isSuccess(), () -> "last write: " + l.a());
        assertTrue(heldBack > 0, "the reader never held the writer back");
        assertEquals("OK " + count, peer.awaitLine("OK"));
        peer.process().getOutputStream().close();
        assertTrue(peer.process().waitFor(30, TimeUnit.SECONDS));
        assertEquals(0, peer.process().exitValue(), "peer exit (3: a leak)");
    }

    /** The reader process is killed while writes wait for it: none hangs, the lane ends, later writes fail. */
    @Test
    void aPeerKilledWhileWeWriteFailsTheWaitingWritesAndEndsTheLane() throws Exception {
        assumeTrue(crossProcess(), "in-process transport");
        Peer peer = startPeer("stall", Long.MAX_VALUE);
        Lane l = laneTo(peer);
        List<ChannelFuture> writes = fillUntilUnwritable(l.a(), 0);
        ChannelFuture held = writes.get(writes.size() - 1);
        peer.kill();
        for (ChannelFuture w : writes) {
            awaited(w); // none hangs
        }
        checkWriteToKilledPeer(held, peer.process().pid());
        l.aSide().awaitInactive();
        assertInstanceOf(IOException.class, awaited(l.a().writeAndFlush(Frames.numbered(0))).cause());
        afterPeerKilled(peer.process().pid());
    }

    /** The writer process is killed mid-stream: what arrived is an intact prefix of what it sent; then the end. */
    @Test
    void aPeerKilledWhileItWritesEndsTheLaneAfterAnIntactPrefix() throws Exception {
        assumeTrue(crossProcess(), "in-process transport");
        Peer peer = startPeer("source", 0);
        Lane l = laneTo(peer);
        l.aSide().expect(0, FRAMES);
        peer.kill();
        l.aSide().awaitInactive();
        long next = FRAMES;
        for (AmFrame f; (f = l.aSide().frames.poll()) != null; next++) {
            try {
                assertNull(Frames.checkNumbered(f, next));
            } finally {
                f.release();
            }
        }
        for (Throwable t : l.aSide().errors()) { // a stream cut mid-frame is reported, named, and nothing else
            assertTrue(t instanceof IOException || t instanceof DecoderException,
                    () -> "unexpected error: " + t);
        }
        afterPeerKilled(peer.process().pid());
    }
}
