package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.ProtocolException;
import io.nucx.transport.AmFrame;
import io.nucx.transport.HostId;
import io.nucx.transport.cma.Cma;
import io.nucx.transport.cma.CmaException;
import io.nucx.transport.cma.CmaKey;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.channels.ClosedChannelException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.nucx.protocol.tag.RndvEndpoint.atp;
import static io.nucx.protocol.tag.RndvEndpoint.bytes;
import static io.nucx.protocol.tag.RndvEndpoint.data;
import static io.nucx.protocol.tag.RndvEndpoint.pattern;
import static io.nucx.protocol.tag.RndvEndpoint.rts;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The receive side of {@code rndv/put/zcopy} in {@link RndvCodec} (NUCX_RNDV_SCHEME put_zcopy) on an embedded
 * endpoint: the receive buffer registered with a real cma lane, offered in the RTR and written by a real
 * {@code process_vm_writev} of this process into its own memory (the kernel treats it as any peer), completion on
 * ATP, the fallbacks, and the PUT safety rule: an offered receive whose endpoint ends is held, not failed, until ATP,
 * RNDV_DATA ({@link RndvCodec#lingerRead}) or the registration's revoke, which for cma completes when the sender's
 * process (a real child process here) has exited; a worker that gives up parks it.
 */
@Timeout(60)
class RndvCodecPutReceiveTest {

    private RndvEndpoint ep;
    private Process child;

    @BeforeEach
    void setUp() {
        ep = new RndvEndpoint(RndvScheme.PUT_ZCOPY, RndvEndpoint.defaultLane(), false);
        ep.lane(Cma.pid()); // registering needs no permission: only the sender's writes do
    }

    @AfterEach
    void tearDown() {
        if (child != null) {
            child.destroyForcibly();
        }
        ep.close();
    }

    private ByteBuf directInto(int n) {
        return ep.directBuffer(n);
    }

    /** The RTR the codec answered with. */
    private record Rtr(long senderReq, long receiverReq, long size, byte[] key) {
    }

    private Rtr rtr() {
        AmFrame f = ep.ch.readOutbound();
        assertTrue(f != null, "no RTR went out");
        try {
            assertEquals(AmIds.RNDV_RTR, f.amId(), () -> "got " + AmIds.name(f.amId()));
            ByteBuf h = f.header();
            ByteBuf key = RndvHeaders.readRtrKey(h);
            return new Rtr(h.getLongLE(0), h.getLongLE(8), h.getLongLE(16), key == null ? null
                    : RndvEndpoint.unbundle(key));
        } finally {
            f.release();
        }
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

    private List<Future<?>> outstanding() {
        List<Future<?>> out = new ArrayList<>();
        ep.codec.collectOutstanding(out);
        return out;
    }

    // ------------------------------------------------------------------ offered, written, acknowledged

    @Test
    void aDirectReceiveBufferIsOfferedInTheRtrWrittenByTheSenderAndCompletedByAtp() throws Exception {
        assumeTrue(Cma.availability().isAvailable(), () -> Cma.availability().reason());
        int n = (int) (2 * Cma.CHUNK + 777);
        byte[] data = pattern(1, n);
        ByteBuf into = directInto(n + 100).writeBytes(new byte[100]); // the message lands after what is there
        Promise<TagMessage> p = ep.receives.post(5, -1L, into);
        ep.arrive(rts(5, 77, n, null));
        Rtr rtr = rtr();
        assertEquals(77, rtr.senderReq());
        assertEquals(n, rtr.size());
        CmaKey key = CmaKey.unpack(rtr.key());
        assertEquals(HostId.get(), key.hostId());
        assertEquals(Cma.pid(), key.pid());
        assertEquals(MemorySegment.ofBuffer(into.nioBuffer(100, n)).address(), key.address(),
                "the user's buffer at its writer index");
        assertEquals(n, key.length());
        assertFalse(p.cancel(false), "an offered receive cannot be cancelled: the sender may be writing into it");
        assertEquals(1, ep.codec.offered());
        List<Future<?>> waits = outstanding();
        assertEquals(1, waits.size(), "a graceful close waits for the sender's last word");
        put(rtr.key(), data);
        assertFalse(p.isDone(), "not before ATP");
        ep.arrive(atp(rtr.receiverReq(), RndvHeaders.STATUS_OK, n));
        assertArrayEquals(data, ep.receives.bytes(p));
        assertEquals(100 + n, into.writerIndex());
        assertTrue(waits.get(0).isSuccess(), "the close may go on");
        assertEquals(1, ep.worker.counters().count(RndvProtocols.RECV_PUT_COUNTER));
        assertEquals(0, ep.worker.counters().count(RndvProtocols.RECV_PUT_FALLBACK_COUNTER));
        assertEquals(0, ep.codec.offered());
        assertFalse(ep.codec.lingers());
        assertEquals(0, ep.endpoint.lingerEndedCount(), "nothing was held");
    }

    @Test
    void anUnexpectedRtsIsOfferedWhenAReceiveWithoutABufferIsPostedIntoAnAllocatedDirectBuffer() throws Exception {
        assumeTrue(Cma.availability().isAvailable(), () -> Cma.availability().reason());
        byte[] data = pattern(2, 100_000);
        ep.arrive(rts(6, 78, data.length, null));
        assertNull(ep.ch.readOutbound(), "nothing before a receive matches");
        Promise<TagMessage> p = ep.receives.post(6, -1L);
        Rtr rtr = rtr();
        assertEquals(78, rtr.senderReq());
        assertEquals(100_000, rtr.size());
        put(rtr.key(), data);
        ep.arrive(atp(rtr.receiverReq(), RndvHeaders.STATUS_OK, data.length));
        assertArrayEquals(data, ep.receives.bytes(p));
    }

    @Test
    void aHeapBufferNoPutLaneOrAClosingEndpointGetsAPlainRtrCounted() {
        ByteBuf heap = Unpooled.buffer(5000);
        ep.hold(heap);
        Promise<TagMessage> p = ep.receives.post(7, -1L, heap);
        ep.arrive(rts(7, 79, 5000, null));
        Rtr r1 = rtr();
        assertNull(r1.key(), "a heap array has no address the sender could write");
        assertEquals(79, r1.senderReq());
        assertFalse(p.cancel(false), "matched: fragments will be written into its buffer, so it cannot be taken back");
        ep.endpoint.rma(null); // what the endpoint answers without a permitted RMA lane with PUT_ZCOPY
        ep.receives.post(8, -1L, directInto(5000));
        ep.arrive(rts(8, 80, 5000, null));
        assertNull(rtr().key());
        ep.endpoint.rma(ep.lane).acceptsOffers(false); // closing: the peer may have ended its sends already
        ep.receives.post(9, -1L, directInto(5000));
        ep.arrive(rts(9, 81, 5000, null));
        assertNull(rtr().key());
        assertEquals(3, ep.worker.counters().count(RndvProtocols.RECV_PUT_FALLBACK_COUNTER));
        assertEquals(0, ep.codec.offered());
        assertEquals(List.of(), outstanding(), "no offer to wait for");
    }

    @Test
    void fragmentsForAnOfferedReceiveEndTheOfferAndCompleteItAndALaterAtpIsAProtocolError() {
        byte[] data = pattern(3, 3000);
        Promise<TagMessage> p = ep.receives.post(9, -1L, directInto(3000));
        ep.arrive(rts(9, 81, data.length, null));
        long rreq = rtr().receiverReq();
        List<Future<?>> waits = outstanding();
        // The sender's PUT failed (or it has no RMA lane): fragments from offset 0, which end the offer.
        ep.arrive(data(rreq, 0, Unpooled.wrappedBuffer(data, 0, 2000)));
        assertEquals(0, ep.codec.offered(), "fragments come only once the PUT is over");
        assertTrue(waits.get(0).isSuccess());
        ep.arrive(data(rreq, 2000, Unpooled.wrappedBuffer(data, 2000, 1000)));
        assertArrayEquals(data, ep.receives.bytes(p));
        ProtocolException e = assertThrows(ProtocolException.class,
                () -> ep.arrive(atp(rreq, RndvHeaders.STATUS_OK, 3000)));
        assertTrue(e.getMessage().contains("RNDV_ATP for receive " + rreq + ", which is offered to no PUT"),
                e.getMessage());
    }

    @Test
    void anAtpReportingAnotherSizeFailsTheReceiveAndIsAProtocolError() {
        Promise<TagMessage> p = ep.receives.post(10, -1L, directInto(3000));
        ep.arrive(rts(10, 82, 3000, null));
        long rreq = rtr().receiverReq();
        ProtocolException e = assertThrows(ProtocolException.class,
                () -> ep.arrive(atp(rreq, RndvHeaders.STATUS_OK, 2999)));
        assertTrue(e.getMessage().contains("2999 bytes written into the 3000-byte receive"), e.getMessage());
        assertTrue(p.isDone() && !p.isSuccess());
        assertSame(e, p.cause());
        assertEquals(0, ep.codec.offered(), "the sender's last word, even a wrong one");
        e = assertThrows(ProtocolException.class, () -> ep.arrive(atp(12345, RndvHeaders.STATUS_OK, 1)));
        assertTrue(e.getMessage().contains("RNDV_ATP for receive 12345"), e.getMessage());
        AmFrame shortAtp = AmFrame.of(AmIds.RNDV_ATP, Unpooled.buffer(16).writeLongLE(rreq).writeLongLE(0));
        e = assertThrows(ProtocolException.class, () -> ep.arrive(shortAtp));
        assertTrue(e.getMessage().contains("RNDV_ATP header is 16 bytes, expected 17"), e.getMessage());
        assertEquals(0, shortAtp.refCnt());
    }

    @Test
    void anAtpCancelledFailsTheReceiveAndReleasesTheBuffer() {
        ByteBuf into = directInto(4000);
        Promise<TagMessage> p = ep.receives.post(11, -1L, into);
        ep.arrive(rts(11, 83, 4000, null));
        assertEquals(2, into.refCnt(), "the receive holds a slice of the user's buffer");
        ep.arrive(atp(rtr().receiverReq(), RndvHeaders.STATUS_CANCELED, 0));
        assertTrue(p.isDone() && !p.isSuccess());
        assertTrue(p.cause().getMessage().contains("stopped writing"), p.cause().getMessage());
        assertEquals(1, into.refCnt());
        assertEquals(0, into.writerIndex());
        assertEquals(0, ep.codec.offered());
    }

    /** An RTR whose write fails never gave the sender the key: the receive ends at once, nothing is held. */
    @Test
    void anOfferWhoseRtrIsNotSentEndsTheReceiveInsteadOfHoldingIt() {
        ep.ch.pipeline().addFirst(new ChannelOutboundHandlerAdapter() {
            @Override
            public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
                ReferenceCountUtil.release(msg);
                promise.setFailure(new ClosedChannelException());
            }
        });
        ByteBuf into = directInto(4000);
        Promise<TagMessage> p = ep.receives.post(14, -1L, into);
        ep.arrive(rts(14, 86, 4000, null));
        assertTrue(p.isDone() && !p.isSuccess(), "ended, not waiting for a sender that never saw the offer");
        assertTrue(p.cause().getMessage().contains("the RTR was not sent"), p.cause().getMessage());
        assertInstanceOf(ClosedChannelException.class, p.cause().getCause());
        assertEquals(0, ep.codec.offered());
        assertEquals(1, into.refCnt(), "the receive's slice is released");
        ep.codec.endpointEnded(new IOException("lane closed"));
        assertEquals(0, ep.codec.heldCount(), "nothing to hold when the endpoint ends");
        assertFalse(ep.codec.lingers());
    }

    // ------------------------------------------------------------------ the PUT safety rule

    /**
     * The endpoint ends while the buffer is offered. The receive is held: not failed, its buffer not released, the
     * endpoint lingers. The sender's ATP(cancelled), arriving on the lane the endpoint kept open, releases it.
     */
    @Test
    void anOfferedReceiveWhoseEndpointEndsIsHeldUntilTheSendersAtp() {
        ByteBuf into = directInto(4000);
        Promise<TagMessage> p = ep.receives.post(12, -1L, into);
        ep.arrive(rts(12, 84, 4000, null));
        long rreq = rtr().receiverReq();
        ep.codec.endpointEnded(new IOException("keepalive timeout"));
        assertFalse(p.isDone(), "held: the sender may still be writing");
        assertFalse(p.cancel(false));
        assertEquals(1, ep.codec.heldCount());
        assertEquals(2, into.refCnt(), "buffer not released");
        assertTrue(ep.codec.lingers(), "the endpoint keeps a lane open for the sender's last word");
        assertEquals(1, ep.codec.offered());
        assertEquals(1, ep.worker.counters().count(RndvProtocols.RECV_PUT_HELD_COUNTER));
        assertEquals("rndv: 0 sends waiting, 1 receives, 1 held", ep.describe());
        ep.ch.runPendingTasks();
        ep.ch.advanceTimeBy(1, TimeUnit.SECONDS);
        ep.ch.runPendingTasks();
        assertFalse(p.isDone(), "our own process is alive: the revoke does not complete");
        ep.codec.lingerRead(atp(999, RndvHeaders.STATUS_CANCELED, 0)); // not one of its receives: dropped
        AmFrame junk = AmFrame.of(AmIds.RNDV_ATP, Unpooled.buffer(9).writeLongLE(rreq).writeByte(-16));
        ep.codec.lingerRead(junk); // malformed: dropped, never thrown (the lane only waits for last words)
        assertEquals(0, junk.refCnt());
        AmFrame other = AmFrame.of(AmIds.EAGER_ONLY, Unpooled.buffer(8).writeLongLE(rreq));
        ep.codec.lingerRead(other);
        assertEquals(0, other.refCnt());
        assertFalse(p.isDone());
        assertEquals(0, ep.endpoint.lingerEndedCount());
        ep.codec.lingerRead(atp(rreq, RndvHeaders.STATUS_CANCELED, 0));
        assertTrue(p.isDone() && !p.isSuccess());
        assertInstanceOf(IOException.class, p.cause());
        assertTrue(p.cause().getMessage().contains("went away"), p.cause().getMessage());
        assertEquals("keepalive timeout", p.cause().getCause().getMessage(), "the endpoint's cause");
        assertEquals(1, into.refCnt());
        assertEquals(0, ep.codec.heldCount());
        assertFalse(ep.codec.lingers());
        assertEquals(1, ep.endpoint.lingerEndedCount(), "the endpoint may close its lanes now");
        assertNull(ep.ch.readOutbound(), "nothing said to the peer meanwhile");
    }

    /**
     * The safety rule with a real sender process: the held receive is released only once the cma registration's
     * revoke completes, which is when that process has exited. The lane's exit checks run on the embedded loop's
     * virtual time.
     */
    @Test
    void aHeldReceiveIsReleasedOnlyAfterTheSendersProcessExited() throws Exception {
        child = new ProcessBuilder("sleep", "60").start();
        int peerPid = (int) child.pid();
        ep.lane(peerPid);
        ByteBuf into = directInto(4000);
        Promise<TagMessage> p = ep.receives.post(13, -1L, into);
        ep.arrive(rts(13, 85, 4000, null));
        assertEquals(peerPid, ep.lane.peerPid());
        assertTrue(rtr().key() != null, "offered to the child");
        ep.codec.endpointEnded(new IOException("lane closed"));
        ep.lane.close(); // the endpoint closes its RMA lane after the codecs: the revoke goes on regardless
        for (int i = 0; i < 3; i++) { // exit checks, each finding the sender alive
            ep.ch.advanceTimeBy(1, TimeUnit.SECONDS);
            ep.ch.runPendingTasks();
        }
        assertFalse(p.isDone(), "the sender lives");
        assertEquals(2, into.refCnt());
        assertEquals(0, ep.endpoint.lingerEndedCount());
        child.destroyForcibly();
        assertTrue(child.waitFor(10, TimeUnit.SECONDS));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!p.isDone()) {
            assertTrue(System.nanoTime() < deadline, "not released after the sender exited");
            ep.ch.advanceTimeBy(1, TimeUnit.SECONDS);
            ep.ch.runPendingTasks();
            Thread.onSpinWait();
        }
        assertInstanceOf(IOException.class, p.cause());
        assertTrue(p.cause().getMessage().contains("pid " + peerPid + " (exited)"), p.cause().getMessage());
        assertEquals("lane closed", p.cause().getCause().getMessage());
        assertEquals(1, into.refCnt());
        assertEquals(0, ep.codec.heldCount());
        assertEquals(1, ep.endpoint.lingerEndedCount());
    }

    @Test
    void fragmentsOnTheLingeringLaneReleaseAHeldReceive() {
        ByteBuf into = directInto(4000);
        Promise<TagMessage> p = ep.receives.post(14, -1L, into);
        ep.arrive(rts(14, 86, 4000, null));
        long rreq = rtr().receiverReq();
        ep.codec.endpointEnded(new IOException("closed"));
        // the sender's PUT failed before it saw the end: it sent DATA, its last word on that buffer
        ep.codec.lingerRead(data(rreq, 0, Unpooled.wrappedBuffer(new byte[100])));
        assertTrue(p.isDone() && !p.isSuccess());
        assertEquals(1, into.refCnt());
        assertEquals(1, ep.endpoint.lingerEndedCount());
    }

    /**
     * A closing worker waits for held receives (its bound is the worker's); what stays unconfirmed is parked: never
     * completed, its buffer never released (and, being kept reachable, never reported as a leak).
     */
    @Test
    void aReceiveStillHeldWhenTheWorkerGivesUpIsParkedNotReleased() {
        ByteBuf into = directInto(4000);
        Promise<TagMessage> p = ep.receives.post(15, -1L, into);
        ep.arrive(rts(15, 87, 4000, null));
        rtr();
        ep.worker.matcher().close(new ClosedChannelException());
        ep.codec.endpointEnded(new ClosedChannelException());
        assertFalse(p.isDone(), "held, not failed, by the end");
        int before = RndvCodec.parkedCount();
        assertEquals(1, ep.codec.park());
        assertEquals(before + 1, RndvCodec.parkedCount());
        assertFalse(p.isDone(), "never completed");
        assertEquals(2, into.refCnt(), "never released");
        assertEquals(0, ep.codec.heldCount());
        assertFalse(ep.codec.lingers());
        assertEquals(0, ep.codec.park(), "parked once");
    }

    /**
     * Parked means for the life of the JVM: a sender process that exits after the worker gave up does not complete
     * the parked receive or release its buffer later (the worker's loop may go on serving others).
     */
    @Test
    void aParkedReceiveStaysParkedWhenTheSenderExitsLater() throws Exception {
        child = new ProcessBuilder("sleep", "60").start();
        ep.lane((int) child.pid());
        ByteBuf into = directInto(4000);
        Promise<TagMessage> p = ep.receives.post(16, -1L, into);
        ep.arrive(rts(16, 88, 4000, null));
        rtr();
        ep.codec.endpointEnded(new ClosedChannelException());
        assertEquals(1, ep.codec.park());
        child.destroyForcibly();
        assertTrue(child.waitFor(10, TimeUnit.SECONDS));
        for (int i = 0; i < 5; i++) { // more than enough exit checks to see it gone, had anyone still looked
            ep.ch.advanceTimeBy(1, TimeUnit.SECONDS);
            ep.ch.runPendingTasks();
        }
        assertFalse(p.isDone(), "parked: never completed");
        assertEquals(2, into.refCnt(), "parked: never released");
        assertEquals(0, ep.codec.heldCount());
        assertEquals(0, ep.endpoint.lingerEndedCount());
    }
}
