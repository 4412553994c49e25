package io.nucx.transport.cma;

import io.nucx.transport.HostId;
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
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.nucx.transport.testsuite.Patterns.fill;
import static io.nucx.transport.testsuite.Patterns.firstMismatch;
import static io.nucx.transport.testsuite.Patterns.pattern;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * {@link Cma} itself: GET and PUT of 1 B to 256 MiB into a second JVM's native memory, content checked; errors named.
 * The cma lane channel is tested through the RMA SPI by {@link CmaRmaLaneTest}.
 */
@Timeout(300)
class CmaTest {

    static final long REGION = 256L << 20;
    private static Process peer;
    private static BufferedReader peerOut;
    private static PrintWriter peerIn;
    private static CmaKey key;


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
        key = CmaKey.unpack(HexFormat.of().parseHex(line.substring(4)));
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

    /**
     * Our address 1-15 bytes past the peer's modulo a page (a receive posted at an odd offset): the kernel's copy is
     * slow there, so the transfer goes through the bounce buffer, and moves the same bytes, across chunks too. At
     * other distances, and below {@link Cma#BOUNCE_FROM}, it does not.
     */
    @ParameterizedTest(name = "GET and PUT {1} B, the destination {0} B past the source modulo a page")
    @CsvSource({"0, 1048579", "1, 1048579", "8, 65536", "15, 4096", "16, 65536", "8, 4095", "4088, 65536"})
    void pageAliasedTransfersGoThroughTheBounceAndMoveTheSameBytes(long distance, long length) throws Exception {
        long offset = 3 * 4096 + 5;
        long theirs = key.address() + offset;
        long expected = distance >= 1 && distance <= 15 && length >= Cma.BOUNCE_FROM ? 1 : 0;
        try (Arena arena = Arena.ofConfined(); Cma cma = new Cma()) {
            MemorySegment pages = arena.allocate(length + 8192, 4096);
            // GET: ours is the destination, `distance` past theirs; PUT: theirs is, `distance` past ours.
            MemorySegment dst = pages.asSlice((theirs + distance) & 4095, length);
            cma.get(key, offset, dst);
            assertEquals(-1, firstMismatch(dst, offset, 1), "first wrong byte of the GET");
            assertEquals(expected, cma.bounced(), "GETs through the bounce");

            MemorySegment src = pages.asSlice((theirs - distance) & 4095, length);
            int seed = (int) (distance + length) | 4;
            fill(src, offset, seed);
            try {
                cma.put(key, offset, src);
                assertEquals(2 * expected, cma.bounced(), "GETs and PUTs through the bounce");
                peerIn.println("CHECK " + offset + " " + length + " " + seed);
                assertEquals("OK", peerOut.readLine());
            } finally {
                fill(src, offset, 1); // restore for the other tests
                cma.put(key, offset, src);
            }
        }
        // The kernel's side of a bounced copy lies at the peer's place in a page.
        assertEquals(0, (Cma.bounceAt(theirs) - theirs) & 4095);
        assertEquals(0, (Cma.bounceAt(theirs + Cma.CHUNK) - theirs) & 4095);
    }

    /**
     * A transfer the kernel cuts short (the peer's second page unreadable or read-only: {@code process_vm_readv}
     * and {@code writev} return the first page's count, then EFAULT) moves exactly the bytes it reported, through the
     * bounce too (distance 8), and fails naming the fault's address. The peer is this process: its pages are ours
     * to protect.
     */
    @ParameterizedTest(name = "{0}, the destination {1} B past the source modulo a page")
    @CsvSource({"GET, 0", "GET, 8", "PUT, 0", "PUT, 8"})
    void aTransferCutShortByAFaultMovesWhatTheKernelReportedAndNamesTheFault(String op, long distance)
            throws Throwable {
        long page = 4096;
        long length = 2 * page;
        boolean get = op.equals("GET");
        try (Arena arena = Arena.ofConfined(); Cma cma = new Cma()) {
            MemorySegment region = arena.allocate(4 * page, page).asSlice(page, length); // whole pages of its own
            MemorySegment pages = arena.allocate(length + 2 * page, page);
            long theirs = region.address();
            MemorySegment ours = pages.asSlice(get ? distance : (page - distance) & (page - 1), length);
            CmaKey self = new CmaKey(HostId.get(), Cma.pid(), theirs, length);
            fill(region, 0, 3);
            if (get) {
                ours.fill((byte) 0x5a);
            } else {
                fill(ours, 0, 9);
            }
            MemorySegment second = region.asSlice(page, page);
            protect(second, get ? 0 : 1); // PROT_NONE: nothing to read; PROT_READ: nothing to write
            CmaException fault;
            try {
                fault = assertThrows(CmaException.class,
                        () -> { if (get) { cma.get(self, 0, ours); } else { cma.put(self, 0, ours); } });
            } finally {
                protect(second, 3);
            }
            assertEquals(CmaNative.EFAULT, fault.errno(), fault.getMessage());
            assertTrue(fault.getMessage().contains("remote 0x" + Long.toHexString(second.address())),
                    "names where it failed: " + fault.getMessage());
            MemorySegment destination = get ? ours : region;
            int seed = get ? 3 : 9;
            assertEquals(-1, firstMismatch(destination.asSlice(0, page), 0, seed), "first wrong byte of page 1");
            MemorySegment untouched = destination.asSlice(page, page);
            for (long i = 0; i < page; i++) {
                byte want = get ? (byte) 0x5a : pattern(page + i, 3);
                assertEquals(want, untouched.get(ValueLayout.JAVA_BYTE, i),
                        "byte " + (page + i) + " was not reported moved and must be as it was");
            }
        }
    }

    private static void protect(MemorySegment pages, int prot) throws Throwable {
        Linker linker = Linker.nativeLinker();
        MethodHandle mprotect = linker.downcallHandle(
                linker.defaultLookup().find("mprotect").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_INT,
                        ValueLayout.ADDRESS, ValueLayout.JAVA_LONG,
                        ValueLayout.JAVA_INT));
        assertEquals(0, (int) mprotect.invokeExact(pages, pages.byteSize(), prot), "mprotect");
    }

    @Test
    void aRangeOfTheLocalSegmentMovesThoseBytesOnlyAndARangeOutsideItOrAClosedArenaIsRefused() throws Exception {
        try (Cma cma = new Cma()) {
            MemorySegment dst;
            try (Arena arena = Arena.ofConfined()) {
                dst = arena.allocate(3 * 4096);
                dst.fill((byte) 0x5a);
                cma.get(key, 4093, dst, 4096, 4096); // the middle page gets the peer's bytes 4093..8188
                assertEquals(-1, firstMismatch(dst.asSlice(4096, 4096), 4093, 1), "first wrong byte");
                for (long at : new long[] {0, 4095, 8192, 3 * 4096 - 1}) {
                    assertEquals((byte) 0x5a, dst.get(ValueLayout.JAVA_BYTE, at), "byte " + at);
                }
                assertThrows(IndexOutOfBoundsException.class, () -> cma.get(key, 0, dst, 8193, 4096));
                assertThrows(IndexOutOfBoundsException.class, () -> cma.put(key, 0, dst, -1, 16));
                assertThrows(IllegalArgumentException.class,
                        () -> cma.get(key, 0, MemorySegment.ofArray(new byte[16]), 0, 16));
            }
            MemorySegment closed = dst;
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> cma.get(key, 0, closed, 0, 16));
            assertTrue(e.getMessage().contains("arena is closed"), e.getMessage());
        }
    }

    @Test
    void errorsNameTheCallThePeerAndErrno() throws Exception {
        try (Arena arena = Arena.ofConfined(); Cma cma = new Cma()) {
            MemorySegment dst = arena.allocate(64);
            CmaException outside = assertThrows(CmaException.class, () -> cma.get(key, REGION - 10, dst));
            assertTrue(outside.getMessage().contains("outside"), outside.getMessage());
            CmaKey unmapped = new CmaKey(key.hostId(), key.pid(), 16, 64);
            CmaException fault = assertThrows(CmaException.class, () -> cma.get(unmapped, 0, dst));
            assertEquals(CmaNative.EFAULT, fault.errno());
            assertTrue(fault.getMessage().contains("process_vm_readv(pid " + key.pid()), fault.getMessage());
            CmaKey gone = new CmaKey(key.hostId(), Integer.MAX_VALUE - 1, key.address(), 64);
            CmaException esrch = assertThrows(CmaException.class, () -> cma.get(gone, 0, dst));
            assertEquals(CmaNative.ESRCH, esrch.errno(), esrch.getMessage());
            assertTrue(cma.mayAccess((int) peer.pid()), "the peer is ours to read");
        }
    }
}
