package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.util.concurrent.Promise;
import io.nucx.protocol.ProtocolCounters;
import io.nucx.protocol.ProtocolException;
import io.nucx.transport.HostId;
import io.nucx.transport.cma.Cma;
import io.nucx.transport.cma.CmaChannel;
import io.nucx.transport.cma.CmaException;
import io.nucx.transport.cma.CmaKey;
import io.nucx.transport.rma.RmaLane;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.channels.ClosedChannelException;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The RTR-with-remote-key and ATP formats, and the receive side of {@code rndv/put/zcopy} in {@link TagMatcher} on an
 * embedded channel's loop: the receive buffer registered with a real cma lane, offered in the RTR and written by a
 * real {@code process_vm_writev} of this process into its own memory (the kernel treats it as any peer), completion
 * on ATP, the fallbacks, and the PUT safety rule: an offered receive whose endpoint ends is held, not failed, until
 * ATP, RNDV_DATA or the lane's revoke, which for cma completes when the sender's process (a real child process here)
 * has exited.
 */
@Timeout(60)
class RndvPutReceiveTest {

    private EmbeddedChannel ch;
    private TagMatcher matcher;
    private final ProtocolCounters counters = new ProtocolCounters();
    private final List<String> replies = new ArrayList<>();
    private final List<byte[]> offered = new ArrayList<>();
    private final List<ByteBuf> held = new ArrayList<>();
    private int released;
    /** The endpoint's RMA lane (rndvPutLane): cma to this process; null = no permitted RMA lane with PUT_ZCOPY. */
    private CmaChannel putLane;
    private Process child;

    @BeforeEach
    void setUp() {
        ch = new EmbeddedChannel();
        putLane = laneTo(Cma.pid());
        matcher = new TagMatcher(ch.eventLoop(), ByteBufAllocator.DEFAULT, 1 << 30, (c, t) -> false, new TagReplies() {
            @Override
            public void sendRtr(Channel ep, long senderReqId, long receiverReqId, long size) {
                replies.add("RTR " + senderReqId + " " + receiverReqId + " " + size);
            }

            @Override
            public void sendRtr(Channel ep, long senderReqId, long receiverReqId, long size, byte[] key) {
                replies.add("RTR+KEY " + senderReqId + " " + receiverReqId + " " + size);
                offered.add(key);
            }

            @Override
            public void sendAts(Channel ep, long senderReqId, int status) {
                replies.add("ATS " + senderReqId + " " + status);
            }

            @Override
            public void sendSyncAck(Channel ep, long senderReqId, int status) {
                replies.add("ACK " + senderReqId);
            }

            @Override
            public RmaLane rndvPutLane(Channel ep) {
                return putLane;
            }

            @Override
            public void rndvPutReleased(Channel ep) {
                released++;
            }
        }, counters, RndvScheme.PUT_ZCOPY);
    }

    @AfterEach
    void tearDown() {
        matcher.close(new ClosedChannelException());
        held.forEach(ByteBuf::release);
        if (child != null) {
            child.destroyForcibly();
        }
        if (putLane != null) {
            putLane.close();
        }
        assertFalse(ch.finishAndReleaseAll());
    }

    private CmaChannel laneTo(int pid) {
        CmaChannel lane = CmaChannel.toProcess(pid);
        ch.eventLoop().register(lane);
        return lane;
    }

    private static byte[] pattern(long seed, int n) {
        byte[] b = new byte[n];
        new SplittableRandom(seed).nextBytes(b);
        return b;
    }

    private static byte[] bytes(ByteBuf b) {
        byte[] a = new byte[b.readableBytes()];
        b.getBytes(b.readerIndex(), a);
        return a;
    }

    private Promise<TagMessage> post(long tag, ByteBuf into) {
        Promise<TagMessage> p = ch.eventLoop().newPromise();
        matcher.post(tag, -1L, into, p);
        return p;
    }

    private ByteBuf directInto(int n) {
        ByteBuf b = ByteBufAllocator.DEFAULT.directBuffer(n);
        held.add(b);
        return b;
    }

    private long receiverReq(int reply) {
        return Long.parseLong(replies.get(reply).split(" ")[2]);
    }

    /** What the sender does: process_vm_writev of {@code data} into the offered key, here into our own memory. */
    private static void put(byte[] packed, byte[] data) throws CmaException {
        CmaKey key = CmaKey.unpack(packed);
        try (Cma cma = new Cma()) {
            ByteBuf src = Unpooled.directBuffer(data.length).writeBytes(data);
            try {
                cma.put(key, 0, MemorySegment.ofBuffer(src.nioBuffer()));
            } finally {
                src.release();
            }
        }
    }

    // ------------------------------------------------------------------ header formats

    @Test
    void anRtrWithARemoteKeyIsTheRtrFollowedByTheKeyLengthAndTheKey() {
        CmaKey key = new CmaKey(0x1122334455667788L, 4242, 0x7f00_0000_2000L, 6000);
        ByteBuf h = RndvHeaders.writeRtr(Unpooled.buffer(), 17, 33, 6000, key.pack());
        try {
            assertEquals(RndvHeaders.rtrLength(key.pack()), h.readableBytes());
            assertEquals(54, h.readableBytes(), "24 + 2 + 28");
            assertEquals(17, h.getLongLE(0), "sender request id");
            assertEquals(33, h.getLongLE(8), "receiver request id");
            assertEquals(6000, h.getLongLE(16), "size");
            assertEquals(28, h.getUnsignedShortLE(24), "key length");
            assertEquals(0x1122334455667788L, h.getLongLE(26), "host id");
            assertEquals(4242, h.getIntLE(34), "pid");
            assertEquals(0x7f00_0000_2000L, h.getLongLE(38), "address");
            assertEquals(6000, h.getLongLE(46), "length");
            assertArrayEquals(key.pack(), bytes(RndvHeaders.readRtrKey(h)));
        } finally {
            h.release();
        }
        ByteBuf plain = RndvHeaders.writeRtr(Unpooled.buffer(), 17, 33, 6000, null);
        try {
            assertEquals(RndvHeaders.RTR_LENGTH, plain.readableBytes());
            assertNull(RndvHeaders.readRtrKey(plain));
        } finally {
            plain.release();
        }
        ByteBuf atp = RndvHeaders.writeAtp(Unpooled.buffer(), 33, RndvHeaders.STATUS_CANCELED, 6000);
        try {
            assertEquals(RndvHeaders.ATP_LENGTH, atp.readableBytes());
            assertEquals(17, atp.readableBytes(), "UCX's ack header: req id, status, size");
            assertEquals(33, atp.getLongLE(0));
            assertEquals(-16, atp.getByte(8));
            assertEquals(6000, atp.getLongLE(9));
        } finally {
            atp.release();
        }
    }

    @Test
    void malformedRtrHeadersAreProtocolErrorsNamingWhatIsWrong() {
        assertMalformed(h -> h.setShortLE(24, 27), "remote key length is 27, but the header has 28 bytes after it");
        assertMalformed(h -> h.setShortLE(24, 0xffff), "remote key length is 65535, expected 1 to 1024");
        assertMalformed(h -> h.writeByte(0), "the header has 29 bytes after it (55 in all)");
        assertMalformed(h -> h.writerIndex(25), "header is 25 bytes, expected 24 or more than 26");
        assertMalformed(h -> h.writerIndex(40), "remote key length is 28, but the header has 14 bytes after it");
    }

    private static void assertMalformed(java.util.function.Consumer<ByteBuf> damage, String expected) {
        ByteBuf h = RndvHeaders.writeRtr(Unpooled.buffer(), 1, 2, 6000, new CmaKey(1, 2, 0x1000, 6000).pack());
        try {
            damage.accept(h);
            ProtocolException e = assertThrows(ProtocolException.class, () -> RndvHeaders.readRtrKey(h));
            assertTrue(e.getMessage().contains(expected), e.getMessage());
            assertTrue(e.getMessage().contains("RNDV_RTR"), e.getMessage());
        } finally {
            h.release();
        }
    }

    // ------------------------------------------------------------------ receive side

    @Test
    void aDirectReceiveBufferIsOfferedInTheRtrWrittenByTheSenderAndCompletedByAtp() throws Exception {
        assumeTrue(Cma.availability().isAvailable(), () -> Cma.availability().reason());
        int n = (int) (2 * Cma.CHUNK + 777);
        byte[] data = pattern(1, n);
        ByteBuf into = directInto(n + 100).writeBytes(new byte[100]); // the message lands after what is there
        Promise<TagMessage> p = post(5, into);
        matcher.onRts(ch, 5, 77, n, null);
        assertEquals(List.of("RTR+KEY 77 1 " + n), replies);
        CmaKey key = CmaKey.unpack(offered.get(0));
        assertEquals(HostId.get(), key.hostId());
        assertEquals(Cma.pid(), key.pid());
        assertEquals(MemorySegment.ofBuffer(into.nioBuffer(100, n)).address(), key.address(),
                "the user's buffer at its writer index");
        assertEquals(n, key.length());
        assertFalse(p.cancel(false), "an offered receive cannot be cancelled: the sender may be writing into it");
        assertEquals(1, matcher.putOfferedCount());
        put(offered.get(0), data);
        assertFalse(p.isDone(), "not before ATP");
        matcher.onAtp(ch, receiverReq(0), RndvHeaders.STATUS_OK, n);
        assertTrue(p.isSuccess(), () -> "receive failed: " + p.cause());
        TagMessage m = p.getNow();
        try {
            assertArrayEquals(data, bytes(m.content()));
        } finally {
            m.release();
        }
        assertEquals(100 + n, into.writerIndex());
        assertEquals(1, counters.count(RndvProtocols.RECV_PUT_COUNTER));
        assertEquals(0, counters.count(RndvProtocols.RECV_PUT_FALLBACK_COUNTER));
        assertEquals(0, matcher.putOfferedCount());
        assertEquals(1, released, "the endpoint is told no offer is outstanding");
        assertEquals(0, matcher.reassemblyCount());
    }

    @Test
    void anUnexpectedRtsIsOfferedWhenAReceiveWithoutABufferIsPostedIntoAnAllocatedDirectBuffer() throws Exception {
        assumeTrue(Cma.availability().isAvailable(), () -> Cma.availability().reason());
        byte[] data = pattern(2, 100_000);
        matcher.onRts(ch, 6, 78, data.length, null);
        assertEquals(List.of(), replies, "nothing before a receive matches");
        Promise<TagMessage> p = post(6, null);
        assertEquals("RTR+KEY 78 1 100000", replies.get(0));
        put(offered.get(0), data);
        matcher.onAtp(ch, receiverReq(0), RndvHeaders.STATUS_OK, data.length);
        TagMessage m = p.getNow();
        try {
            assertArrayEquals(data, bytes(m.content()));
        } finally {
            m.release();
        }
    }

    @Test
    void aHeapReceiveBufferOrAnEndpointWithoutAPutLaneGetsAPlainRtrCounted() {
        ByteBuf heap = Unpooled.buffer(5000);
        held.add(heap);
        Promise<TagMessage> p = post(7, heap);
        matcher.onRts(ch, 7, 79, 5000, null);
        assertEquals(List.of("RTR 79 1 5000"), replies, "a heap array has no address the sender could write");
        assertFalse(p.cancel(false), "matched: fragments will be written into its buffer, so it cannot be taken back");
        putLane.close();
        putLane = null; // what the worker answers without a permitted RMA lane with PUT_ZCOPY
        post(8, directInto(5000));
        matcher.onRts(ch, 8, 80, 5000, null);
        assertEquals("RTR 80 2 5000", replies.get(1));
        assertEquals(2, counters.count(RndvProtocols.RECV_PUT_FALLBACK_COUNTER));
        assertEquals(0, matcher.putOfferedCount());
    }

    @Test
    void fragmentsForAnOfferedReceiveEndTheOfferAndCompleteItAndALaterAtpIsAProtocolError() {
        byte[] data = pattern(3, 3000);
        Promise<TagMessage> p = post(9, directInto(3000));
        matcher.onRts(ch, 9, 81, data.length, null);
        long rreq = receiverReq(0);
        // The sender's PUT failed (or it has no RMA lane): fragments from offset 0, which end the offer.
        matcher.onRndvData(ch, rreq, 0, Unpooled.wrappedBuffer(data, 0, 2000));
        assertEquals(0, matcher.putOfferedCount(), "fragments come only once the PUT is over");
        matcher.onRndvData(ch, rreq, 2000, Unpooled.wrappedBuffer(data, 2000, 1000));
        TagMessage m = p.getNow();
        try {
            assertArrayEquals(data, bytes(m.content()));
        } finally {
            m.release();
        }
        ProtocolException e = assertThrows(ProtocolException.class,
                () -> matcher.onAtp(ch, rreq, RndvHeaders.STATUS_OK, 3000));
        assertTrue(e.getMessage().contains("offered to no PUT"), e.getMessage());
    }

    @Test
    void anAtpReportingAnotherSizeFailsTheReceiveAndIsAProtocolError() {
        Promise<TagMessage> p = post(10, directInto(3000));
        matcher.onRts(ch, 10, 82, 3000, null);
        ProtocolException e = assertThrows(ProtocolException.class,
                () -> matcher.onAtp(ch, receiverReq(0), RndvHeaders.STATUS_OK, 2999));
        assertTrue(e.getMessage().contains("2999 bytes written into the 3000-byte receive"), e.getMessage());
        assertTrue(p.isDone() && !p.isSuccess());
        assertEquals(0, matcher.putOfferedCount(), "the sender's last word, even a wrong one");
        assertThrows(ProtocolException.class, () -> matcher.onAtp(ch, 12345, RndvHeaders.STATUS_OK, 1));
    }

    @Test
    void anAtpCancelledFailsTheReceiveAndReleasesTheBuffer() {
        ByteBuf into = directInto(4000);
        Promise<TagMessage> p = post(11, into);
        matcher.onRts(ch, 11, 83, 4000, null);
        assertEquals(2, into.refCnt(), "the receive holds a slice of the user's buffer");
        matcher.onAtp(ch, receiverReq(0), RndvHeaders.STATUS_CANCELED, 0);
        assertTrue(p.isDone() && !p.isSuccess());
        assertTrue(p.cause().getMessage().contains("stopped writing"), p.cause().getMessage());
        assertEquals(1, into.refCnt());
        assertEquals(0, into.writerIndex());
    }

    /**
     * The safety rule: the endpoint ends while the buffer is offered. The receive is held: not failed, its buffer
     * not released. The sender's ATP(cancelled), arriving on the lane the endpoint kept open, releases it.
     */
    @Test
    void anOfferedReceiveWhoseEndpointEndsIsHeldUntilTheSendersAtp() {
        ByteBuf into = directInto(4000);
        Promise<TagMessage> p = post(12, into);
        matcher.onRts(ch, 12, 84, 4000, null);
        matcher.onSourceClosed(ch, new IOException("keepalive timeout"));
        assertFalse(p.isDone(), "held: the sender may still be writing");
        assertEquals(1, matcher.heldCount());
        assertEquals(2, into.refCnt(), "buffer not released");
        assertTrue(matcher.putOfferedTo(ch));
        assertEquals(1, counters.count(RndvProtocols.RECV_PUT_HELD_COUNTER));
        ch.runPendingTasks();
        ch.runScheduledPendingTasks();
        assertFalse(p.isDone(), "our own process is alive");
        matcher.onHeldAtpOrData(ch, 999); // not one of its receives: dropped
        assertFalse(p.isDone());
        matcher.onAtp(ch, receiverReq(0), RndvHeaders.STATUS_CANCELED, 0);
        assertTrue(p.isDone() && !p.isSuccess());
        assertTrue(p.cause().getMessage().contains("went away"), p.cause().getMessage());
        assertEquals(1, into.refCnt());
        assertEquals(0, matcher.heldCount());
        assertFalse(matcher.putOfferedTo(ch));
        assertEquals(1, released);
    }

    /**
     * The safety rule with a real sender process: the held receive is released only once the cma lane's revoke
     * completes, which is when that process has exited. The lane's exit checks run on the embedded loop's virtual time.
     */
    @Test
    void aHeldReceiveIsReleasedOnlyAfterTheSendersProcessExited() throws Exception {
        child = new ProcessBuilder("sleep", "60").start();
        int peerPid = (int) child.pid();
        putLane.close();
        putLane = laneTo(peerPid);
        ByteBuf into = directInto(4000);
        Promise<TagMessage> p = post(13, into);
        matcher.onRts(ch, 13, 85, 4000, null);
        matcher.onSourceClosed(ch, new IOException("lane closed"));
        for (int i = 0; i < 3; i++) { // three exit checks, each finding the sender alive
            ch.advanceTimeBy(1, TimeUnit.SECONDS);
            ch.runScheduledPendingTasks();
        }
        assertFalse(p.isDone(), "the sender lives");
        assertEquals(2, into.refCnt());
        child.destroyForcibly();
        assertTrue(child.waitFor(10, TimeUnit.SECONDS));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!p.isDone()) {
            assertTrue(System.nanoTime() < deadline, "not released after the sender exited");
            ch.advanceTimeBy(1, TimeUnit.SECONDS);
            ch.runPendingTasks(); // the exit check, then the release it posts
            Thread.onSpinWait();
        }
        assertInstanceOf(IOException.class, p.cause());
        assertTrue(p.cause().getMessage().contains("pid " + peerPid + " (exited)"), p.cause().getMessage());
        assertEquals(1, into.refCnt());
        assertEquals(0, matcher.heldCount());
    }

    @Test
    void fragmentsOnTheLingeringLaneReleaseAHeldReceive() {
        ByteBuf into = directInto(4000);
        Promise<TagMessage> p = post(14, into);
        matcher.onRts(ch, 14, 86, 4000, null);
        matcher.onSourceClosed(ch, new IOException("closed"));
        matcher.onHeldAtpOrData(ch, receiverReq(0)); // the sender's PUT failed before it saw the end: it sent DATA
        assertTrue(p.isDone() && !p.isSuccess());
        assertEquals(1, into.refCnt());
    }

    /**
     * A closing worker waits for held receives; what stays unconfirmed is parked: never completed, its buffer never
     * released (and, being kept reachable, never reported as a leak).
     */
    @Test
    void aReceiveStillHeldWhenTheWorkerGivesUpIsParkedNotReleased() {
        ByteBuf into = directInto(4000);
        Promise<TagMessage> p = post(15, into);
        matcher.onRts(ch, 15, 87, 4000, null);
        matcher.close(new ClosedChannelException());
        assertFalse(p.isDone(), "held, not failed, by the worker's close");
        var waited = matcher.heldReleased(TimeUnit.MILLISECONDS.toNanos(50));
        assertFalse(waited.isDone());
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (!waited.isDone() && System.nanoTime() < deadline) {
            ch.runScheduledPendingTasks();
        }
        assertTrue(waited.isDone(), "bounded wait");
        int before = TagMatcher.parkedCount();
        assertEquals(1, matcher.parkHeld());
        assertEquals(before + 1, TagMatcher.parkedCount());
        assertFalse(p.isDone(), "never completed");
        assertEquals(2, into.refCnt(), "never released");
        assertEquals(1, released, "the endpoint may close its lane now");
        assertEquals(0, matcher.heldCount());
    }
}
