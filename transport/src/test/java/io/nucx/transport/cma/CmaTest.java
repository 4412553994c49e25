package io.nucx.transport.cma;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** GET and PUT of 1 B to 256 MiB into a second JVM's native memory, content checked; errors named. */
@Timeout(300)
class CmaTest {

    static final long REGION = 256L << 20;
    private static Process peer;
    private static BufferedReader peerOut;
    private static PrintWriter peerIn;
    private static RemoteKey key;

    /** The byte every test expects at absolute offset {@code i} of a region filled with {@code seed}. */
    static byte pattern(long i, int seed) {
        long x = (i + seed) * 0x9E3779B97F4A7C15L;
        return (byte) (x >>> 56);
    }

    static void fill(MemorySegment s, long base, int seed) {
        for (long i = 0; i < s.byteSize(); i++) {
            s.set(ValueLayout.JAVA_BYTE, i, pattern(base + i, seed));
        }
    }

    static long firstMismatch(MemorySegment s, long base, int seed) {
        for (long i = 0; i < s.byteSize(); i++) {
            if (s.get(ValueLayout.JAVA_BYTE, i) != pattern(base + i, seed)) {
                return base + i;
            }
        }
        return -1;
    }

    @BeforeAll
    static void startPeer() throws Exception {
        assumeTrue(Cma.availability().isAvailable(), () -> "cma unavailable here: " + Cma.availability().reason());
        String java = ProcessHandle.current().info().command().orElseThrow();
        peer = new ProcessBuilder(List.of(java, "--enable-native-access=ALL-UNNAMED", "-cp",
                System.getProperty("java.class.path"), CmaPeer.class.getName(), Long.toString(REGION)))
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        peerOut = new BufferedReader(new InputStreamReader(peer.getInputStream()));
        peerIn = new PrintWriter(peer.getOutputStream(), true);
        String line = peerOut.readLine();
        assertTrue(line != null && line.startsWith("KEY "), "peer said: " + line);
        key = RemoteKey.unpack(HexFormat.of().parseHex(line.substring(4)));
        assertEquals(peer.pid(), key.pid());
    }

    @AfterAll
    static void stopPeer() throws Exception {
        if (peer != null) {
            peerIn.println("EXIT");
            assertTrue(peer.waitFor(30, TimeUnit.SECONDS));
        }
    }

    @ParameterizedTest(name = "GET {1} B at {0}")
    @CsvSource({"0, 1", "4093, 4096", "1000, 1048579", "7, 67108864", "0, 268435456"})
    void getReadsThePeersMemoryByteForByte(long offset, long length) throws Exception {
        try (Arena arena = Arena.ofConfined(); Cma cma = new Cma()) {
            MemorySegment dst = arena.allocate(length);
            cma.get(key, offset, dst);
            assertEquals(-1, firstMismatch(dst, offset, 1), "first wrong byte");
        }
    }

    @ParameterizedTest(name = "PUT {1} B at {0}")
    @CsvSource({"100, 1", "8191, 4096", "3, 1048579", "0, 134217728", "0, 268435456"})
    void putWritesThePeersMemoryAndThePeerSeesIt(long offset, long length) throws Exception {
        int seed = (int) (offset + length) | 2;
        try (Arena arena = Arena.ofConfined(); Cma cma = new Cma()) {
            MemorySegment src = arena.allocate(length);
            fill(src, offset, seed);
            cma.put(key, offset, src);
        }
        peerIn.println("CHECK " + offset + " " + length + " " + seed);
        assertEquals("OK", peerOut.readLine());
        try (Arena arena = Arena.ofConfined(); Cma cma = new Cma()) { // restore for the GET tests
            MemorySegment src = arena.allocate(length);
            fill(src, offset, 1);
            cma.put(key, offset, src);
        }
    }

    @Test
    void errorsNameTheCallThePeerAndErrno() throws Exception {
        try (Arena arena = Arena.ofConfined(); Cma cma = new Cma()) {
            MemorySegment dst = arena.allocate(64);
            CmaException outside = assertThrows(CmaException.class, () -> cma.get(key, REGION - 10, dst));
            assertTrue(outside.getMessage().contains("outside"), outside.getMessage());
            RemoteKey unmapped = new RemoteKey(key.hostId(), key.pid(), 16, 64);
            CmaException fault = assertThrows(CmaException.class, () -> cma.get(unmapped, 0, dst));
            assertEquals(CmaNative.EFAULT, fault.errno());
            assertTrue(fault.getMessage().contains("process_vm_readv(pid " + key.pid()), fault.getMessage());
            RemoteKey gone = new RemoteKey(key.hostId(), Integer.MAX_VALUE - 1, key.address(), 64);
            CmaException esrch = assertThrows(CmaException.class, () -> cma.get(gone, 0, dst));
            assertEquals(CmaNative.ESRCH, esrch.errno(), esrch.getMessage());
            assertTrue(cma.mayAccess((int) peer.pid()), "the peer is ours to read");
        }
    }

    // ---------------------------------------------------------------- the cma lane channel

    @Test
    void theLaneChannelGetsAndPutsChunkByChunkOnItsLoopAndFailsWithTheErrno() throws Exception {
        io.netty.channel.EventLoopGroup group = new io.netty.channel.MultiThreadIoEventLoopGroup(1,
                io.netty.channel.nio.NioIoHandler.newFactory());
        try (Arena arena = Arena.ofShared()) {
            io.netty.channel.EventLoop loop = group.next();
            CmaChannel lane = CmaChannel.toProcess((int) peer.pid());
            loop.register(lane).sync();
            assertTrue(lane.isActive());

            // GET of 64 MiB: another task on the loop runs before it is done (one chunk per turn).
            long n = 64L << 20;
            MemorySegment dst = arena.allocate(n);
            io.netty.channel.ChannelFuture get = lane.writeAndFlush(RmaOp.get(key, 7, dst));
            boolean doneWhenOtherTaskRan = loop.submit(get::isDone).get(30, TimeUnit.SECONDS);
            assertTrue(get.await(60, TimeUnit.SECONDS) && get.isSuccess(), () -> "GET: " + get.cause());
            assertFalse(doneWhenOtherTaskRan, "the loop served another task between chunks");
            assertEquals(-1, firstMismatch(dst, 7, 1), "first wrong byte");

            // PUT through the lane, checked by the peer, then restored.
            MemorySegment src = arena.allocate(3 * Cma.CHUNK + 5);
            fill(src, 11, 7);
            assertTrue(lane.writeAndFlush(RmaOp.put(key, 11, src)).await(30, TimeUnit.SECONDS));
            peerIn.println("CHECK 11 " + src.byteSize() + " 7");
            assertEquals("OK", peerOut.readLine());
            fill(src, 11, 1);
            assertTrue(lane.writeAndFlush(RmaOp.put(key, 11, src)).sync().isSuccess());

            // Unmapped memory: the write fails with EFAULT named, and the lane stays usable.
            io.netty.channel.ChannelFuture bad = lane.writeAndFlush(RmaOp.get(new RemoteKey(key.hostId(),
                    key.pid(), 16, 64), 0, arena.allocate(64))).await();
            CmaException fault = assertInstanceOf(CmaException.class, bad.cause());
            assertEquals(CmaNative.EFAULT, fault.errno());
            assertTrue(lane.isActive());

            // A cancelled operation stops before its next chunk and touches nothing more.
            MemorySegment big = arena.allocate(8 * Cma.CHUNK);
            RmaOp op = RmaOp.get(key, 0, big);
            io.netty.channel.ChannelFuture cancelled = loop.submit(() -> {
                io.netty.channel.ChannelFuture f = lane.writeAndFlush(op); // runs the first chunk now
                op.cancel();
                return f;
            }).get(30, TimeUnit.SECONDS);
            assertTrue(cancelled.await(30, TimeUnit.SECONDS));
            assertInstanceOf(java.util.concurrent.CancellationException.class, cancelled.cause());
            assertEquals(Cma.CHUNK, op.done(), "only the first chunk moved");

            // What a cma lane refuses: other messages, and keys of another process.
            assertInstanceOf(UnsupportedOperationException.class, lane.writeAndFlush("hello").await().cause());
            RemoteKey other = new RemoteKey(key.hostId(), key.pid() + 1, key.address(), 64);
            assertInstanceOf(IllegalArgumentException.class,
                    lane.writeAndFlush(RmaOp.get(other, 0, arena.allocate(64))).await().cause());
            lane.close().sync();
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }
}
