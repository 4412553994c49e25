package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.util.concurrent.Future;
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
import java.nio.channels.ClosedChannelException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.nucx.protocol.tag.RndvEndpoint.atpFields;
import static io.nucx.protocol.tag.RndvEndpoint.direct;
import static io.nucx.protocol.tag.RndvEndpoint.memory;
import static io.nucx.protocol.tag.RndvEndpoint.pattern;
import static io.nucx.protocol.tag.RndvEndpoint.rtr;
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
 * The send side of {@code rndv/put/zcopy} in {@link RndvCodec}, on an embedded endpoint whose RMA lane is a real cma
 * channel to this very process: an RTR with a key is answered by writing the message into that memory
 * (process_vm_writev), straight or through a bounce chunk, then ATP; the fallbacks to fragments (no lane, a PUT the
 * kernel refuses at run time); the endpoint ending mid-PUT (cancelled before the next chunk, ATP cancelled written
 * below the pipeline as the endpoint's last words, the endpoint lingering until they are written or its close bound);
 * a late offer to an ended endpoint refused.
 */
@Timeout(60)
class RndvCodecPutSendTest {

    private static final int MAX_BCOPY = 65536;
    private static final int FRAGMENT = MAX_BCOPY - RndvHeaders.DATA_LENGTH;

    private RndvEndpoint ep;

    @BeforeEach
    void setUp() {
        assumeTrue(Cma.availability().isAvailable(), () -> Cma.availability().reason());
        ep = new RndvEndpoint(RndvScheme.PUT_ZCOPY, RndvEndpoint.defaultLane(), true);
    }

    @AfterEach
    void tearDown() {
        if (ep != null) {
            ep.close();
        }
    }

    /** The "receiver's" buffer: native memory of this process, zeroed. */
    private ByteBuf receiveBuffer(int n) {
        return ep.directBuffer(n);
    }

    /** The receive buffer's key as the receiver's lane packs it into the RTR. */
    private static byte[] keyOf(ByteBuf b) {
        return CmaKey.of(b.nioBuffer(0, b.capacity())).pack();
    }

    /** Sends {@code content} by rendezvous; returns its sender request id (from the RTS that went out). */
    private long send(ByteBuf content, ChannelFuture[] future) {
        future[0] = ep.ch.writeAndFlush(new RndvSendRequest(3, content));
        AmFrame rts = ep.ch.readOutbound();
        try {
            assertEquals(AmIds.RNDV_RTS, rts.amId());
            assertEquals(RndvHeaders.RTS_LENGTH, rts.header().readableBytes(), "put/zcopy's RTS is plain");
            return rts.header().getLongLE(8);
        } finally {
            rts.release();
        }
    }

    /** The ATP written through the pipeline (the endpoint is alive). */
    private long[] atp() {
        return atpFields(ep.ch.readOutbound());
    }

    /** The one ATP written below the pipeline, as last words. */
    private long[] lastWords() {
        assertEquals(1, ep.endpoint.directFrames().size(), "one frame below the pipeline");
        return atpFields(ep.endpoint.directFrames().remove(0));
    }

    @Test
    void aKeyCarryingRtrIsAnsweredByWritingTheMessageIntoThatMemoryThenAtp() {
        int n = (int) (2 * Cma.TURN_BYTES + 4321);
        byte[] data = pattern(1, n);
        ByteBuf dst = receiveBuffer(n);
        ChannelFuture[] f = new ChannelFuture[1];
        long id = send(direct(data), f);
        ep.arrive(rtr(id, 900, n, keyOf(dst)));
        assertFalse(f[0].isDone(), "the rest on later loop turns");
        assertEquals(1, ep.codec.sendsWaiting(), "a send being written stays (a graceful close waits for it)");
        List<Future<?>> waits = new ArrayList<>();
        ep.codec.collectOutstanding(waits);
        assertEquals(List.of(f[0]), waits);
        assertEquals(2, ep.turnsUntil(f[0]::isDone), "a turn's bytes at once, then a turn's per loop turn");
        assertArrayEquals(new long[] {900, RndvHeaders.STATUS_OK, n}, atp());
        assertTrue(f[0].isSuccess(), () -> "send failed: " + f[0].cause());
        assertArrayEquals(data, memory(dst));
        assertNull(ep.ch.readOutbound(), "no fragments");
        assertEquals(1, ep.worker.counters().count(RndvProtocols.PUT_COUNTER));
        assertEquals(0, ep.worker.counters().count(RndvProtocols.PUT_FALLBACK_COUNTER));
        assertEquals(0, ep.codec.sendsWaiting());
    }

    @Test
    void aHeapSendIsWrittenThroughABounceChunkChunkByChunk() {
        int n = (int) (Cma.CHUNK * 3 / 2);
        byte[] data = pattern(2, n);
        ByteBuf dst = receiveBuffer(n);
        ChannelFuture[] f = new ChannelFuture[1];
        ByteBuf content = Unpooled.wrappedBuffer(data);
        long id = send(content, f);
        ep.arrive(rtr(id, 901, n, keyOf(dst)));
        assertFalse(f[0].isDone());
        ep.ch.runPendingTasks();
        assertArrayEquals(new long[] {901, RndvHeaders.STATUS_OK, n}, atp());
        assertTrue(f[0].isSuccess());
        assertArrayEquals(data, memory(dst));
        assertEquals(0, content.refCnt());
    }

    @Test
    void withoutAPermittedRmaLaneTheDataGoAsFragmentsFromOffsetZeroCounted() {
        ep.endpoint.rma(null);
        byte[] data = pattern(3, 150_000);
        ChannelFuture[] f = new ChannelFuture[1];
        long id = send(direct(data), f);
        ep.arrive(rtr(id, 902, data.length, keyOf(receiveBuffer(data.length))));
        assertArrayEquals(data, ep.dataFrames(902, data.length, FRAGMENT));
        assertTrue(f[0].isSuccess());
        assertEquals(1, ep.worker.counters().count(RndvProtocols.PUT_FALLBACK_COUNTER));
        assertEquals(0, ep.worker.counters().count(RndvProtocols.PUT_COUNTER));
    }

    @Test
    void aPutTheKernelRefusesAtRunTimeFallsBackToFragmentsFromOffsetZero() {
        byte[] data = pattern(4, 100_000);
        // A key to memory that is not mapped: the kernel answers EFAULT, as it would EPERM/ESRCH at run time.
        byte[] bad = new CmaKey(HostId.get(), Cma.pid(), 4096, data.length).pack();
        ChannelFuture[] f = new ChannelFuture[1];
        long id = send(direct(data), f);
        ep.arrive(rtr(id, 903, data.length, bad));
        ep.ch.runPendingTasks();
        assertArrayEquals(data, ep.dataFrames(903, data.length, FRAGMENT));
        assertTrue(f[0].isSuccess());
        assertEquals(1, ep.endpoint.rmaFailureCauses().size());
        CmaException e = assertInstanceOf(CmaException.class, ep.endpoint.rmaFailureCauses().get(0));
        assertTrue(e.getMessage().contains("process_vm_writev") && e.getMessage().contains("EFAULT"), e.getMessage());
        assertTrue(ep.endpoint.rmaFailures().get(0).startsWith("rndv/put/zcopy fell back to RNDV_DATA"));
        assertEquals(1, ep.worker.counters().count(RndvProtocols.PUT_FALLBACK_COUNTER));
        assertEquals(0, ep.codec.sendsWaiting());
    }

    /**
     * The endpoint ends mid-PUT: the operation is cancelled before its next chunk (nothing after the first chunk
     * reaches the receiver's memory), the send fails with the endpoint's cause, and an ATP cancelled, written below
     * the gone pipeline, tells the receiver it may release its buffer. Both paths: one operation from a direct
     * buffer, chunk operations from heap.
     */
    @Test
    void anEndpointEndingMidPutCancelsItBeforeTheNextChunkAndSendsAtpCancelled() {
        for (boolean heap : new boolean[] {false, true}) {
            int n = (int) (3 * Cma.TURN_BYTES);
            byte[] data = pattern(5, n);
            ByteBuf dst = receiveBuffer(n);
            ChannelFuture[] f = new ChannelFuture[1];
            ByteBuf content = heap ? Unpooled.wrappedBuffer(data) : direct(data);
            long id = send(content, f);
            ep.arrive(rtr(id, 904, n, keyOf(dst)));
            IOException cause = new IOException("endpoint failed");
            ep.codec.endpointEnded(cause);
            assertArrayEquals(new long[] {904, RndvHeaders.STATUS_CANCELED, 0}, lastWords());
            assertFalse(ep.codec.lingers(), "its last words are written: nothing to linger for");
            ep.ch.runPendingTasks(); // the next chunk would run here
            assertSame(cause, f[0].cause());
            assertEquals(0, content.refCnt());
            byte[] got = memory(dst);
            int first = (int) (heap ? Cma.CHUNK : Cma.TURN_BYTES); // one bounce chunk, or one turn of the lane's
            assertArrayEquals(Arrays.copyOf(data, first), Arrays.copyOf(got, first), "the first turn ran");
            assertArrayEquals(new byte[n - first], Arrays.copyOfRange(got, first, n), "nothing after the cancel");
            assertNull(ep.ch.readOutbound(), "nothing through the gone pipeline");
            assertEquals(0, ep.codec.sendsWaiting());
            assertEquals(0, ep.worker.counters().count(RndvProtocols.PUT_COUNTER));
            assertEquals(0, ep.worker.counters().count(RndvProtocols.PUT_FALLBACK_COUNTER), "no fragments either");
        }
    }

    /** The endpoint lingers until its last words are written, or at most its close bound when the lane is stuck. */
    @Test
    void theEndpointLingersUntilItsLastWordsAreWrittenBoundedByTheCloseWait() {
        ep.endpoint.directWritesComplete(false).closeWait(TimeUnit.SECONDS.toNanos(3));
        // Large enough that neither PUT ends before the end: the lane moves a turn's bytes of the first at its write,
        // and no turn runs here
        int n = (int) (4 * Cma.TURN_BYTES);
        ChannelFuture[] a = new ChannelFuture[1];
        ChannelFuture[] b = new ChannelFuture[1];
        long ida = send(direct(pattern(6, n)), a);
        long idb = send(direct(pattern(7, n)), b);
        ep.arrive(rtr(ida, 905, n, keyOf(receiveBuffer(n))));
        ep.arrive(rtr(idb, 906, n, keyOf(receiveBuffer(n))));
        ep.ch.freezeTime();
        ep.codec.endpointEnded(new IOException("ended"));
        assertEquals(2, ep.endpoint.directFrames().size());
        assertTrue(ep.codec.lingers(), "last words still being written");
        ep.endpoint.directPromises().get(0).setSuccess();
        assertTrue(ep.codec.lingers(), "one still on its way");
        assertEquals(0, ep.endpoint.lingerEndedCount());
        ep.ch.advanceTimeBy(2, TimeUnit.SECONDS);
        ep.ch.runPendingTasks();
        assertTrue(ep.codec.lingers(), "within the close bound");
        ep.ch.advanceTimeBy(1, TimeUnit.SECONDS);
        ep.ch.runPendingTasks();
        assertFalse(ep.codec.lingers(), "a lane that does not drain does not keep the endpoint");
        assertEquals(1, ep.endpoint.lingerEndedCount());
        ep.endpoint.directPromises().get(1).setFailure(new ClosedChannelException()); // late: counted once
        assertEquals(1, ep.endpoint.lingerEndedCount());
        List<AmFrame> words = ep.endpoint.directFrames();
        assertArrayEquals(new long[] {905, RndvHeaders.STATUS_CANCELED, 0}, atpFields(words.get(0)));
        assertArrayEquals(new long[] {906, RndvHeaders.STATUS_CANCELED, 0}, atpFields(words.get(1)));
        ep.endpoint.directFrames().clear();
        ep.ch.unfreezeTime();
    }

    /**
     * A peer that offers a buffer for PUT to an endpoint that has ended would hold it until our exit: the ended
     * endpoint answers ATP(cancelled) below the pipeline. Other lingering frames are dropped.
     */
    @Test
    void aLateOfferToAnEndedEndpointIsRefusedAtOnce() {
        ep.codec.endpointEnded(new ClosedChannelException());
        ep.codec.lingerRead(rtr(77, 907, 5000, keyOf(receiveBuffer(5000))));
        assertArrayEquals(new long[] {907, RndvHeaders.STATUS_CANCELED, 0}, lastWords());
        AmFrame plain = rtr(78, 908, 5000, null);
        ep.codec.lingerRead(plain);
        assertEquals(0, plain.refCnt());
        assertEquals(List.of(), ep.endpoint.directFrames(), "a plain RTR offers nothing to refuse");
    }

    @Test
    void answersForASendBeingWrittenByPutAreProtocolErrors() {
        int n = (int) (2 * Cma.TURN_BYTES);
        ChannelFuture[] f = new ChannelFuture[1];
        long id = send(direct(pattern(8, n)), f);
        ep.arrive(rtr(id, 909, n, keyOf(receiveBuffer(n))));
        ProtocolException e = assertThrows(ProtocolException.class, () -> ep.arrive(rtr(id, 909, n, null)));
        assertTrue(e.getMessage().contains("RTR for rendezvous send " + id + ", which is being written by PUT"),
                e.getMessage());
        AmFrame ats = AmFrame.of(AmIds.RNDV_ATS, Unpooled.buffer(9).writeLongLE(id).writeByte(0));
        e = assertThrows(ProtocolException.class, () -> ep.arrive(ats));
        assertTrue(e.getMessage().contains("ATS for rendezvous send " + id + ", which is being written by PUT"),
                e.getMessage());
        ep.turnsUntil(f[0]::isDone);
        assertArrayEquals(new long[] {909, RndvHeaders.STATUS_OK, n}, atp());
        assertTrue(f[0].isSuccess(), "the PUT went on");
    }

    @Test
    void aKeyOfAnotherProcessIsAProtocolErrorAndNothingIsWritten() {
        ChannelFuture[] f = new ChannelFuture[1];
        ByteBuf dst = receiveBuffer(5000);
        long id = send(direct(pattern(6, 5000)), f);
        CmaKey own = CmaKey.of(dst.nioBuffer(0, dst.capacity()));
        byte[] other = new CmaKey(own.hostId(), own.pid() + 1, own.address(), own.length()).pack();
        ProtocolException e = assertThrows(ProtocolException.class, () -> ep.arrive(rtr(id, 905, 5000,
                other)));
        assertTrue(e.getMessage().contains("names memory of pid " + (own.pid() + 1)), e.getMessage());
        assertTrue(e.getMessage().contains("RNDV_RTR for rendezvous send " + id), e.getMessage());
        byte[] shorter = new CmaKey(own.hostId(), own.pid(), own.address(), 4999).pack();
        e = assertThrows(ProtocolException.class, () -> ep.arrive(rtr(id, 905, 5000, shorter)));
        assertTrue(e.getMessage().contains("remote key covers 4999 bytes of a 5000-byte message"), e.getMessage());
        byte[] foreign = new byte[40]; // another transport's key, say
        e = assertThrows(ProtocolException.class, () -> ep.arrive(rtr(id, 905, 5000, foreign)));
        assertTrue(e.getMessage().contains("cma remote key is 40 bytes, expected 28"), e.getMessage());
        assertArrayEquals(new byte[5000], memory(dst));
        assertFalse(f[0].isDone(), "failed when the lane closes");
        assertEquals(1, ep.codec.sendsWaiting());
    }

    @Test
    void aKeyCarryingRtrForAnotherSizeFailsTheSendAndTellsTheReceiverNothingWillBeWritten() {
        ChannelFuture[] f = new ChannelFuture[1];
        long id = send(direct(pattern(7, 5000)), f);
        ep.arrive(rtr(id, 906, 4000, keyOf(receiveBuffer(4000))));
        assertArrayEquals(new long[] {906, RndvHeaders.STATUS_CANCELED, 0}, atp());
        assertInstanceOf(ProtocolException.class, f[0].cause());
        ProtocolException again = assertThrows(ProtocolException.class,
                () -> ep.arrive(rtr(id, 906, 5000, null)));
        assertTrue(again.getMessage().contains("unknown rendezvous send"), again.getMessage());
    }
}
