package io.nucx.transport.testsuite;

import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.channel.EventLoop;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.util.concurrent.Future;
import io.nucx.transport.Iface;
import io.nucx.transport.IfaceParams;
import io.nucx.transport.NucxConfig;
import io.nucx.transport.Transport;
import io.nucx.transport.Transports;
import io.nucx.transport.rma.InvalidRemoteKeyException;
import io.nucx.transport.rma.MemoryRegistration;
import io.nucx.transport.rma.RemoteKey;
import io.nucx.transport.rma.RmaException;
import io.nucx.transport.rma.RmaLane;
import io.nucx.transport.rma.RmaOp;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import static io.nucx.transport.testsuite.Patterns.fill;
import static io.nucx.transport.testsuite.Patterns.firstMismatch;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The RMA part of the transport conformance suite, written once against the {@link RmaLane} SPI and run by every
 * transport that implements it (a subclass names the transport and says how its revoke behaves, as Netty's testsuite
 * subclasses {@code SocketEchoTest} per transport). The peer is a second JVM ({@link RmaPeer}) that exposes a region of
 * native memory through its own lane to us.
 *
 * <p>Covered: GET and PUT of every size around the transport's segment, content checked by the peer; the loop's tasks,
 * timers and I/O served while a large operation moves; cancel between segments; keys that are malformed or name someone
 * else's memory refused by name; ops the lane does not perform and keys it did not unpack refused without harm to the
 * lane; heap memory refused by {@code register}; the peer dying mid-operation; and the revoke contract: while the peer
 * can still write into a registration, its revoke has not completed; once it completes, the peer cannot write.
 */
@Timeout(180)
public abstract class RmaLaneConformanceTest {

    private static final HexFormat HEX = HexFormat.of();
    /** The peer's exposed region. */
    protected static final long REGION = 32L << 20;

    private final String transportName;
    private final boolean revokeWaitsForPeerExit;

    /**
     * @param transportName          the transport under test
     * @param revokeWaitsForPeerExit whether a registration's revoke completes only once the peer process has exited
     *                               (cma: nothing else stops a process of the same user writing our memory) rather
     *                               than at once (rdma deregisters the region)
     */
    protected RmaLaneConformanceTest(String transportName, boolean revokeWaitsForPeerExit) {
        this.transportName = transportName;
        this.revokeWaitsForPeerExit = revokeWaitsForPeerExit;
    }

    protected final String transportName() {
        return transportName;
    }

    private boolean revokeWaitsForPeerExit() {
        return revokeWaitsForPeerExit;
    }

    /** Keys in this transport's format that name memory other than the peer's (another process or host). */
    protected abstract List<byte[]> foreignKeys(byte[] peerKey);

    /** A key the lane accepts whose range is not mapped in the peer (an operation on it fails at run time). */
    protected abstract byte[] unmappedKey(byte[] peerKey);

    /** Whether the lane's {@link RmaLane#performNow} does a small operation there and then (cma: yes). */
    protected boolean performsSmallOperationsAtOnce() {
        return false;
    }


    /** The second JVM, spoken to line by line. */
    private final class Peer implements AutoCloseable {
        final Process process;
        final BufferedReader out;
        final PrintWriter in;
        final byte[] packedKey;

        Peer() throws Exception {
            String java = ProcessHandle.current().info().command().orElseThrow();
            process = new ProcessBuilder(List.of(java, "--enable-native-access=ALL-UNNAMED", "-cp",
                    System.getProperty("java.class.path"), RmaPeer.class.getName(), transportName(),
                    Long.toString(REGION))).redirectError(ProcessBuilder.Redirect.INHERIT).start();
            out = new BufferedReader(new InputStreamReader(process.getInputStream()));
            in = new PrintWriter(process.getOutputStream(), true);
            String[] addr = expect("ADDR").split(" ", -1);
            peerDevice = HEX.parseHex(addr[1]);
            peerIface = HEX.parseHex(addr[2]);
            in.println("CONNECT " + HEX.formatHex(iface.deviceAddress()) + " " + HEX.formatHex(iface.ifaceAddress()));
            packedKey = HEX.parseHex(expect("KEY").substring(4));
        }

        private String expect(String what) throws Exception {
            String line = out.readLine();
            assertTrue(line != null && line.startsWith(what + " "), "peer said " + line + ", expected " + what);
            return line;
        }

        String ask(String command) throws Exception {
            in.println(command);
            String answer = out.readLine();
            assertNotNull(answer, "the peer ended while asked " + command);
            return answer;
        }

        void kill() throws Exception {
            process.destroyForcibly();
            assertTrue(process.waitFor(30, TimeUnit.SECONDS), "the peer did not die");
        }

        @Override
        public void close() throws Exception {
            if (process.isAlive()) {
                in.println("EXIT");
                if (!process.waitFor(30, TimeUnit.SECONDS)) {
                    kill();
                }
            }
        }
    }

    private MultiThreadIoEventLoopGroup group;
    private EventLoop loop;
    private Iface iface;
    private Arena arena;
    private Peer peer;
    private byte[] peerDevice;
    private byte[] peerIface;
    /** Our lane to the peer and the peer's region through it. */
    private RmaLane lane;
    private RemoteKey key;
    private long segment;

    @BeforeEach
    void setUp() throws Exception {
        Transport transport = Transports.all().stream().filter(t -> t.name().equals(transportName())).findFirst()
                .orElseThrow(() -> new AssertionError("no transport " + transportName()));
        assumeTrue(transport.availability().isAvailable(), () -> transport.availability().reason());
        group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        loop = group.next();
        NucxConfig config = NucxConfig.fromEnvironment();
        iface = onLoop(() -> transport.openIface(new IfaceParams(loop, transport.defaultDevice(config),
                ChannelInboundHandlerAdapter::new, config)));
        segment = iface.attributes().rmaSegment();
        arena = Arena.ofShared();
        peer = new Peer();
        lane = connect(peerDevice, peerIface);
        key = onLoop(() -> lane.unpackKey(Unpooled.wrappedBuffer(peer.packedKey)));
        assertEquals(REGION, key.length());
    }

    @AfterEach
    void tearDown() throws Exception {
        try {
            if (peer != null) {
                peer.close();
            }
            if (lane != null) {
                lane.channel().close().sync();
            }
            if (iface != null) {
                iface.close().sync();
            }
        } finally {
            if (group != null) {
                group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
            }
            if (arena != null) {
                arena.close();
            }
        }
    }

    private RmaLane connect(byte[] device, byte[] ifaceAddress) throws Exception {
        ChannelFuture f = onLoop(() -> iface.connect(device, ifaceAddress, new ChannelInboundHandlerAdapter()));
        return (RmaLane) f.sync().channel();
    }

    private <T> T onLoop(Callable<T> task) throws Exception {
        try {
            return loop.submit(task).get(30, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof Exception cause) {
                throw cause;
            }
            throw e;
        }
    }

    private static Future<Void> awaited(Future<Void> f) throws InterruptedException {
        assertTrue(f.await(60, TimeUnit.SECONDS), "operation not done in 60 s");
        return f;
    }

    private Future<Void> run(RmaOp op) throws InterruptedException {
        return awaited(lane.channel().writeAndFlush(op));
    }

    // ---------------------------------------------------------------- GET and PUT

    /** GET and PUT of each size on both sides of the segment, at an odd offset; the peer checks what we wrote. */
    @Test
    void getAndPutMoveEveryByteAtEverySizeAroundTheSegment() throws Exception {
        for (long n : new long[] {1, 8, segment - 1, segment, segment + 1, 3 * segment + 5, 16L << 20}) {
            long offset = 7;
            MemorySegment dst = arena.allocate(n);
            Future<Void> get = run(RmaOp.get(key, offset, dst));
            assertTrue(get.isSuccess(), () -> "GET " + n + ": " + get.cause());
            assertEquals(-1, firstMismatch(dst, offset, 1), "GET " + n + ": first wrong byte");

            MemorySegment src = arena.allocate(n);
            fill(src, offset, 9);
            Future<Void> put = run(RmaOp.put(key, offset, src));
            assertTrue(put.isSuccess(), () -> "PUT " + n + ": " + put.cause());
            assertEquals("OK", peer.ask("CHECK " + offset + " " + n + " 9"), "PUT " + n);
            fill(src, offset, 1); // restore the region for the next size
            assertTrue(run(RmaOp.put(key, offset, src)).isSuccess());
        }
    }

    /** A large operation gives the loop back between segments: a task submitted after it runs before it is done. */
    @Test
    void aLargeOperationGivesTheLoopBackBeforeItIsDone() throws Exception {
        assertFalse(largeGetDoneWhenRan(loop::execute), "the loop served another task before the GET was done");
    }

    /**
     * Between two segments the loop runs a whole turn, its I/O and its timers, not only queued tasks: a timer due at
     * once, set after a large operation started, fires before the operation is done. (Netty runs the tasks queued
     * during a batch of tasks in that batch, for up to its task quantum of a second, and takes timers only when a
     * batch begins after the turn's I/O; a transport that queued its next segment as a task would hold both.)
     */
    @Test
    void aLargeOperationLetsTheLoopsTimersAndIoRunBetweenSegments() throws Exception {
        assertFalse(largeGetDoneWhenRan(r -> loop.schedule(r, 0, TimeUnit.NANOSECONDS)),
                "a " + REGION + "-byte GET held the loop's timers until it was done");
    }

    /**
     * Whether a GET of the whole region was done when {@code submit} ran what it was given. Started and submitted in
     * one task on the loop, so what is submitted waits behind the GET's first segment whatever the scheduler does to
     * this thread in between.
     */
    private boolean largeGetDoneWhenRan(Consumer<Runnable> submit) throws Exception {
        MemorySegment dst = arena.allocate(REGION);
        CompletableFuture<Boolean> doneWhenRan = new CompletableFuture<>();
        ChannelFuture get = onLoop(() -> {
            ChannelFuture w = lane.channel().writeAndFlush(RmaOp.get(key, 0, dst));
            submit.accept(() -> doneWhenRan.complete(w.isDone()));
            return w;
        });
        boolean done = doneWhenRan.get(30, TimeUnit.SECONDS);
        assertTrue(awaited(get).isSuccess(), () -> "GET: " + get.cause());
        assertEquals(-1, firstMismatch(dst, 0, 1));
        return done;
    }

    /**
     * An operation part way through when its loop shuts down (a plain Netty group shut down under its lanes) fails, and
     * the lane closes: Netty cancels a loop's timers when it shuts down, so a lane that waits for the next turn must
     * not be left waiting.
     */
    @Test
    void anOperationPartWayThroughWhenItsLoopShutsDownFailsAndTheLaneCloses() throws Exception {
        RmaOp op = RmaOp.get(key, 0, arena.allocate(REGION));
        ChannelFuture f = onLoop(() -> {
            ChannelFuture w = lane.channel().writeAndFlush(op);
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            return w;
        });
        assertTrue(f.await(30, TimeUnit.SECONDS), "a GET part way through when its loop shut down never ended ("
                + op.done() + " of " + op.length() + " bytes moved)");
        assertFalse(f.isSuccess(), "a GET whose loop shut down " + op.done() + " bytes in reported success");
        assertTrue(op.done() < op.length(), () -> "moved " + op.done() + " of " + op.length());
        assertTrue(f.cause().getMessage() != null && f.cause().getMessage().contains("shut down"),
                () -> "the failure says why: " + f.cause());
        assertTrue(lane.channel().closeFuture().await(30, TimeUnit.SECONDS), "the lane closed");
        assertTrue(group.awaitTermination(30, TimeUnit.SECONDS), "the loop ended");
        lane = null; // closed, and the iface's loop is gone: nothing to close them on
        iface = null;
    }

    /** A cancel between segments stops the operation: it fails with CancellationException having moved less. */
    @Test
    void aCancelledOperationStopsBeforeItsNextSegment() throws Exception {
        MemorySegment dst = arena.allocate(8 * segment);
        RmaOp op = RmaOp.get(key, 0, dst);
        ChannelFuture f = onLoop(() -> {
            ChannelFuture w = lane.channel().writeAndFlush(op);
            op.cancel();
            return w;
        });
        assertInstanceOf(CancellationException.class, awaited(f).cause());
        assertTrue(op.done() < op.length(), () -> "moved " + op.done() + " of " + op.length() + " after the cancel");
        assertTrue(lane.channel().isActive(), "the lane stays usable");
        assertTrue(run(RmaOp.get(key, 0, arena.allocate(64))).isSuccess());
    }

    /** A write whose promise was cancelled before its flush is dropped unperformed; the lane goes on with the next. */
    @Test
    void aWriteCancelledBeforeItsFlushIsDroppedAndTheNextIsPerformed() throws Exception {
        MemorySegment dropped = arena.allocate(64);
        MemorySegment next = arena.allocate(64);
        RmaOp op = RmaOp.get(key, 0, dropped);
        ChannelPromise cancelled = lane.channel().newPromise();
        ChannelFuture f = onLoop(() -> {
            lane.channel().write(op, cancelled);
            assertTrue(cancelled.cancel(false));
            return lane.channel().writeAndFlush(RmaOp.get(key, 0, next));
        });
        assertTrue(awaited(f).isSuccess(), () -> "the next GET: " + f.cause());
        assertEquals(-1, firstMismatch(next, 0, 1));
        assertEquals(0, op.done(), "the cancelled write moved nothing");
        assertTrue(lane.channel().isActive(), "the lane stays usable");
    }

    // ---------------------------------------------------------------- performNow

    /**
     * On the loop with nothing queued, a small GET and PUT are done at once by {@link RmaLane#performNow} (where the
     * lane does that), every byte moved; a lane that does not leaves the operation untouched for its write.
     */
    @Test
    void performNowMovesASmallOperationAtOnceOrLeavesItUntouched() throws Exception {
        MemorySegment dst = arena.allocate(4096);
        RmaOp get = RmaOp.get(key, 7, dst);
        boolean got = onLoop(() -> lane.performNow(get));
        assertEquals(performsSmallOperationsAtOnce(), got, "GET done at once");
        if (!got) {
            assertEquals(0, get.done(), "an operation left to the write is untouched");
            assertTrue(run(get).isSuccess());
        }
        assertTrue(get.isDone());
        assertEquals(-1, firstMismatch(dst, 7, 1), "GET: first wrong byte");

        MemorySegment src = arena.allocate(4096);
        fill(src, 7, 9);
        RmaOp put = RmaOp.put(key, 7, src);
        boolean putNow = onLoop(() -> lane.performNow(put));
        assertEquals(performsSmallOperationsAtOnce(), putNow, "PUT done at once");
        if (!putNow) {
            assertTrue(run(put).isSuccess());
        }
        assertEquals("OK", peer.ask("CHECK 7 4096 9"));
        fill(src, 7, 1);
        assertTrue(run(RmaOp.put(key, 7, src)).isSuccess());
    }

    /**
     * performNow never overtakes a write (one still queued, here a large GET's later segments), never runs off the
     * loop, and leaves an operation larger than one step to the write: each time false, the operation untouched.
     */
    @Test
    void performNowLeavesToTheWriteWhatItCannotDoInOrderAtOnce() throws Exception {
        RmaOp small = RmaOp.get(key, 0, arena.allocate(64));
        assertFalse(lane.performNow(small), "off the loop");
        RmaOp large = RmaOp.get(key, 0, arena.allocate(REGION));
        assertFalse(onLoop(() -> lane.performNow(large)), "larger than one step");
        assertEquals(0, large.done());
        ChannelFuture[] first = new ChannelFuture[1];
        boolean overtook = onLoop(() -> {
            first[0] = lane.channel().writeAndFlush(large); // its first segment now, the rest on later turns
            return lane.performNow(small);
        });
        assertFalse(overtook, "a write was still queued");
        assertEquals(0, small.done());
        assertTrue(awaited(first[0]).isSuccess());
        assertTrue(run(small).isSuccess());
    }

    /** An operation performNow does and that fails throws the transport's error; the lane goes on. */
    @Test
    void performNowThrowsAFailedOperationsErrorAndTheLaneGoesOn() throws Exception {
        assumeTrue(performsSmallOperationsAtOnce(), "the lane leaves every operation to its write");
        RemoteKey unmapped = onLoop(() -> lane.unpackKey(Unpooled.wrappedBuffer(unmappedKey(peer.packedKey))));
        RmaException e = assertThrows(RmaException.class,
                () -> onLoop(() -> lane.performNow(RmaOp.get(unmapped, 0, arena.allocate(64)))));
        assertTrue(e.getMessage().length() > 20, e.getMessage());
        assertTrue(onLoop(() -> lane.performNow(RmaOp.get(key, 0, arena.allocate(64)))), "the lane still works");
    }

    // ---------------------------------------------------------------- keys and refusals

    @Test
    void malformedAndForeignKeysAreRefusedNamingWhatIsWrong() throws Exception {
        byte[] good = peer.packedKey;
        assertRefused(Arrays.copyOf(good, good.length - 1), "bytes");
        assertRefused(Arrays.copyOf(good, good.length + 1), "bytes");
        assertRefused(new byte[0], "bytes");
        for (byte[] foreign : foreignKeys(good)) {
            assertRefused(foreign, "");
        }
        assertTrue(lane.channel().isActive());
    }

    private void assertRefused(byte[] packed, String expected) throws Exception {
        InvalidRemoteKeyException e = assertThrows(InvalidRemoteKeyException.class,
                () -> onLoop(() -> lane.unpackKey(Unpooled.wrappedBuffer(packed))), () -> HEX.formatHex(packed));
        assertTrue(e.getMessage().contains(expected) && e.getMessage().length() > 20, e.getMessage());
    }

    /** An operation on memory the peer does not have fails with the transport's error, named; the lane goes on. */
    @Test
    void anOperationOnUnmappedMemoryFailsWithTheTransportsErrorAndTheLaneGoesOn() throws Exception {
        RemoteKey unmapped = onLoop(() -> lane.unpackKey(Unpooled.wrappedBuffer(unmappedKey(peer.packedKey))));
        Future<Void> f = run(RmaOp.get(unmapped, 0, arena.allocate(64)));
        RmaException e = assertInstanceOf(RmaException.class, f.cause());
        assertTrue(e.getMessage().length() > 20, e.getMessage());
        assertTrue(run(RmaOp.get(key, 0, arena.allocate(64))).isSuccess(), "the lane still works");
    }

    /**
     * What the lane refuses fails that write only: a message that is no RmaOp, an operation kind it does not perform,
     * and a key another lane unpacked (here: a lane to our own process). Kinds it performs work.
     */
    @Test
    void writesTheLaneCannotPerformFailAloneAndAtomicsWorkWhereSupported() throws Exception {
        assertInstanceOf(UnsupportedOperationException.class, awaited(lane.channel().writeAndFlush("hello")).cause());
        MemorySegment word = arena.allocate(8, 8);
        for (RmaOp.Kind kind : RmaOp.Kind.values()) {
            if (!kind.isAtomic()) {
                assertTrue(lane.supports(kind), kind + " is what an RMA lane is for");
                continue;
            }
            RmaOp op = switch (kind) {
                case FETCH_ADD -> RmaOp.fetchAdd(key, 64, 5);
                case SWAP -> RmaOp.swap(key, 64, 42);
                default -> RmaOp.compareAndSwap(key, 64, 42, 43);
            };
            Future<Void> f = run(op);
            if (lane.supports(kind)) {
                assertTrue(f.isSuccess(), () -> kind + ": " + f.cause());
                assertTrue(run(RmaOp.get(key, 64, word)).isSuccess());
            } else {
                UnsupportedOperationException e = assertInstanceOf(UnsupportedOperationException.class, f.cause());
                assertTrue(e.getMessage().contains(kind.name()), e.getMessage());
            }
        }
        RmaLane toSelf = connect(iface.deviceAddress(), iface.ifaceAddress());
        try {
            MemorySegment mine = arena.allocate(64);
            MemoryRegistration r = onLoop(() -> toSelf.register(mine));
            RemoteKey own = onLoop(() -> toSelf.unpackKey(Unpooled.wrappedBuffer(r.packedKey())));
            assertInstanceOf(IllegalArgumentException.class, run(RmaOp.get(own, 0, arena.allocate(64))).cause(),
                    "a key of our own process written to the lane to the peer");
            onLoop(() -> {
                r.close();
                return null;
            });
        } finally {
            toSelf.channel().close().sync();
        }
        assertTrue(lane.channel().isActive());
        assertTrue(run(RmaOp.get(key, 0, arena.allocate(64))).isSuccess(), "the lane still works");
    }

    @Test
    void registerRefusesHeapMemorySayingWhy() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> onLoop(() -> lane.register(MemorySegment.ofArray(new byte[64]))));
        assertTrue(e.getMessage().contains("heap"), e.getMessage());
    }

    /** The operations' own checks: a range outside the key, an atomic not aligned to 8 bytes. */
    @Test
    void anOperationOutsideItsKeyIsRefusedWhenMade() {
        assertThrows(IllegalArgumentException.class, () -> RmaOp.get(key, REGION - 10, arena.allocate(64)));
        assertThrows(IllegalArgumentException.class, () -> RmaOp.put(key, -1, arena.allocate(1)));
        assertThrows(IllegalArgumentException.class, () -> RmaOp.fetchAdd(key, 3, 1));
        assertThrows(IllegalArgumentException.class, () -> RmaOp.swap(key, REGION - 4, 1));
    }

    // ---------------------------------------------------------------- the peer going away

    /**
     * The peer dies while an operation is in flight (killed between its segments, with our loop held meanwhile): the
     * operation fails with the transport's error, never hangs, and so do later ones.
     */
    @Test
    void thePeerDyingMidOperationFailsItAndTheNextOnes() throws Exception {
        MemorySegment dst = arena.allocate(16 * segment);
        ChannelFuture f = onLoop(() -> {
            ChannelFuture w = lane.channel().writeAndFlush(RmaOp.get(key, 0, dst));
            if (!w.isDone()) {
                peer.kill(); // holds our loop until the peer is gone: the next segment finds no process
            }
            return w;
        });
        if (!peer.process.isAlive()) {
            assertInstanceOf(RmaException.class, awaited(f).cause());
        } else {
            peer.kill(); // the transport did it in one go: nothing was in flight to fail
        }
        Future<Void> after = run(RmaOp.get(key, 0, arena.allocate(64)));
        assertInstanceOf(RmaException.class, after.cause());
    }

    // ---------------------------------------------------------------- the revoke contract

    /**
     * The revoke contract: we expose memory, the peer writes into it; after revoke(), as long as the peer can still
     * write into it the future has not completed (seen causally: its write lands after the revoke began); once the
     * future completes, the peer cannot write any more. A cma peer can be stopped only by its exit.
     */
    @Test
    void aRevokeCompletesOnlyWhenThePeerCanNoLongerWrite() throws Exception {
        MemorySegment mine = arena.allocate(4096);
        MemoryRegistration r = onLoop(() -> lane.register(mine));
        assertEquals(mine.address(), r.address());
        assertEquals(4096, r.length());
        String hex = HEX.formatHex(r.packedKey());
        assertEquals("OK", peer.ask("PUT " + hex + " 0 4096 3"));
        assertEquals(-1, firstMismatch(mine, 0, 3), "the peer wrote into our registration");

        Future<Void> revoked = onLoop(r::revoke);
        assertSame(revoked, onLoop(r::revoke), "revoke twice: one future");
        if (revokeWaitsForPeerExit()) {
            assertEquals("OK", peer.ask("PUT " + hex + " 0 4096 4"));
            assertEquals(-1, firstMismatch(mine, 0, 4), "the peer still writes");
            assertFalse(revoked.isDone(), "revoke completed while the peer could still write");
            lane.channel().close().sync(); // the contract holds after the lane closed
            peer.kill();
            assertTrue(awaited(revoked).isSuccess(), () -> "revoke: " + revoked.cause());
        } else {
            assertTrue(awaited(revoked).isSuccess(), () -> "revoke: " + revoked.cause());
            assertTrue(peer.ask("PUT " + hex + " 0 4096 4").startsWith("ERR"), "the peer wrote after the revoke");
            assertEquals(-1, firstMismatch(mine, 0, 3), "nothing changed after the revoke");
        }
        onLoop(() -> {
            r.close(); // after the revoke: nothing more to do
            return null;
        });
    }

    /** close() ends a registration at once: a revoke after it, or one it interrupts, fails with a cancellation. */
    @Test
    void closeEndsARegistrationAndCancelsItsRevoke() throws Exception {
        MemoryRegistration closed = onLoop(() -> lane.register(arena.allocate(64)));
        Future<Void> after = onLoop(() -> {
            closed.close();
            closed.close(); // idempotent
            return closed.revoke();
        });
        assertInstanceOf(CancellationException.class, awaited(after).cause());
        if (revokeWaitsForPeerExit()) {
            MemoryRegistration r = onLoop(() -> lane.register(arena.allocate(64)));
            Future<Void> revoking = onLoop(r::revoke);
            assertFalse(revoking.isDone(), "the peer lives");
            onLoop(() -> {
                r.close(); // e.g. the peer's last word arrived after all
                return null;
            });
            assertInstanceOf(CancellationException.class, awaited(revoking).cause());
        }
    }
}
