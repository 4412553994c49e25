package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.embedded.EmbeddedChannel;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.EndpointConfig;
import io.nucx.protocol.ProtocolCounters;
import io.nucx.protocol.ProtocolException;
import io.nucx.transport.AmFrame;
import io.nucx.transport.Capability;
import io.nucx.transport.HostId;
import io.nucx.transport.IfaceAttributes;
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
import java.nio.channels.ClosedChannelException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.SplittableRandom;

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
 * The send side of {@code rndv/put/zcopy} in {@link RndvSends}, on an embedded endpoint channel whose RMA lane is a
 * real cma channel to this very process: an RTR with a key is answered by writing the message into that memory
 * (process_vm_writev), straight or through a bounce chunk, then ATP; the fallbacks to fragments (no lane, a PUT the
 * kernel refuses at run time); the endpoint ending mid-PUT (cancelled before the next chunk, ATP cancelled).
 */
@Timeout(60)
class RndvPutSendTest {

    private static final int MAX_BCOPY = 65536;
    private static final int FRAGMENT = MAX_BCOPY - RndvHeaders.DATA_LENGTH;

    private EmbeddedChannel ch;
    private RndvSends sends;
    /** The RMA lane the worker would give, or null (none permitted). */
    private CmaChannel lane;
    private final ProtocolCounters counters = new ProtocolCounters();
    private final List<Throwable> putFailures = new ArrayList<>();
    private final List<ByteBuf> held = new ArrayList<>();

    @BeforeEach
    void setUp() {
        assumeTrue(Cma.availability().isAvailable(), () -> Cma.availability().reason());
        sends = new RndvSends(new RndvSends.RmaLanes() {
            @Override
            public RmaLane putLane(Channel endpoint) {
                return lane;
            }

            @Override
            public void putFailed(Channel endpoint, Throwable cause) {
                putFailures.add(cause);
            }
        }, counters);
        EndpointConfig config = new EndpointConfig("test/lo", new IfaceAttributes(EnumSet.of(Capability.AM_SHORT,
                Capability.AM_BCOPY), 8192, MAX_BCOPY, 64, 1e-6, 0, 1e9, 0, 1e-7, 0));
        ch = new EmbeddedChannel(new RndvTagSendHandler(config, sends));
        lane = CmaChannel.toProcess(Cma.pid());
        ch.eventLoop().register(lane);
    }

    @AfterEach
    void tearDown() {
        if (sends != null) {
            sends.close(new ClosedChannelException());
            if (lane != null) {
                lane.close();
            }
            ch.runPendingTasks();
            for (Object o; (o = ch.readOutbound()) != null; ) {
                io.netty.util.ReferenceCountUtil.release(o);
            }
            assertFalse(ch.finishAndReleaseAll());
        }
        held.forEach(ByteBuf::release);
    }

    private static byte[] pattern(long seed, int n) {
        byte[] b = new byte[n];
        new SplittableRandom(seed).nextBytes(b);
        return b;
    }

    /** The "receiver's" buffer: native memory of this process, zeroed. */
    private ByteBuf receiveBuffer(int n) {
        ByteBuf b = ByteBufAllocator.DEFAULT.directBuffer(n, n).writeZero(n);
        held.add(b);
        return b;
    }

    /** The receive buffer's key as the receiver's lane packs it into the RTR. */
    private static ByteBuf keyOf(ByteBuf b) {
        return packed(CmaKey.of(b.nioBuffer(0, b.capacity())));
    }

    private static ByteBuf packed(CmaKey key) {
        return Unpooled.wrappedBuffer(key.pack());
    }

    private static byte[] bytes(ByteBuf b) {
        byte[] a = new byte[b.capacity()];
        b.getBytes(0, a);
        return a;
    }

    /** Sends {@code content} by rendezvous; returns its sender request id (from the RTS that went out). */
    private long send(ByteBuf content, ChannelFuture[] future) {
        future[0] = ch.writeAndFlush(new RndvSendRequest(3, content));
        AmFrame rts = ch.readOutbound();
        try {
            assertEquals(AmIds.RNDV_RTS, rts.amId());
            assertEquals(RndvHeaders.RTS_LENGTH, rts.header().readableBytes(), "put/zcopy's RTS is plain");
            return rts.header().getLongLE(8);
        } finally {
            rts.release();
        }
    }

    private static ByteBuf direct(byte[] data) {
        return ByteBufAllocator.DEFAULT.directBuffer(data.length).writeBytes(data);
    }

    /** The ATP that went out: {receiver req, status, size}. */
    private long[] atp() {
        AmFrame f = ch.readOutbound();
        try {
            assertEquals(AmIds.RNDV_ATP, f.amId(), () -> "got " + AmIds.name(f.amId()));
            assertEquals(RndvHeaders.ATP_LENGTH, f.header().readableBytes());
            ByteBuf h = f.header();
            return new long[] {h.getLongLE(0), h.getByte(8), h.getLongLE(9)};
        } finally {
            f.release();
        }
    }

    /** Collects RNDV_DATA frames for {@code receiverReq} until {@code n} bytes, checking each header. */
    private byte[] dataFrames(long receiverReq, int n) {
        byte[] got = new byte[n];
        int seen = 0;
        while (seen < n) {
            AmFrame f = ch.readOutbound();
            assertTrue(f != null, "only " + seen + " of " + n + " bytes as fragments");
            try {
                assertEquals(AmIds.RNDV_DATA, f.amId());
                assertEquals(receiverReq, f.header().getLongLE(0));
                int offset = (int) f.header().getLongLE(8);
                assertEquals(seen, offset, "fragments in order from offset 0");
                int len = f.payload().readableBytes();
                assertTrue(len <= FRAGMENT);
                f.payload().getBytes(f.payload().readerIndex(), got, offset, len);
                seen += len;
            } finally {
                f.release();
            }
        }
        return got;
    }

    @Test
    void aKeyCarryingRtrIsAnsweredByWritingTheMessageIntoThatMemoryThenAtp() {
        int n = (int) (2 * Cma.CHUNK + 4321);
        byte[] data = pattern(1, n);
        ByteBuf dst = receiveBuffer(n);
        ChannelFuture[] f = new ChannelFuture[1];
        long id = send(direct(data), f);
        sends.onRtr(ch, id, 900, n, keyOf(dst));
        assertFalse(f[0].isDone(), "one chunk per loop turn");
        assertEquals(1, sends.size(), "a send being written stays (a graceful close waits for it)");
        ch.runPendingTasks();
        assertArrayEquals(new long[] {900, RndvHeaders.STATUS_OK, n}, atp());
        assertTrue(f[0].isSuccess(), () -> "send failed: " + f[0].cause());
        assertArrayEquals(data, bytes(dst));
        assertNull(ch.readOutbound(), "no fragments");
        assertEquals(1, counters.count(RndvProtocols.PUT_COUNTER));
        assertEquals(0, counters.count(RndvProtocols.PUT_FALLBACK_COUNTER));
        assertEquals(0, sends.size());
    }

    @Test
    void aHeapSendIsWrittenThroughABounceChunkChunkByChunk() {
        int n = (int) (Cma.CHUNK * 3 / 2);
        byte[] data = pattern(2, n);
        ByteBuf dst = receiveBuffer(n);
        ChannelFuture[] f = new ChannelFuture[1];
        long id = send(Unpooled.wrappedBuffer(data), f);
        sends.onRtr(ch, id, 901, n, keyOf(dst));
        ch.runPendingTasks();
        assertArrayEquals(new long[] {901, RndvHeaders.STATUS_OK, n}, atp());
        assertTrue(f[0].isSuccess());
        assertArrayEquals(data, bytes(dst));
    }

    @Test
    void withoutAPermittedRmaLaneTheDataGoAsFragmentsFromOffsetZeroCounted() {
        lane.close();
        ch.runPendingTasks();
        lane = null;
        byte[] data = pattern(3, 150_000);
        ChannelFuture[] f = new ChannelFuture[1];
        long id = send(direct(data), f);
        sends.onRtr(ch, id, 902, data.length, keyOf(receiveBuffer(data.length)));
        assertArrayEquals(data, dataFrames(902, data.length));
        assertTrue(f[0].isSuccess());
        assertEquals(1, counters.count(RndvProtocols.PUT_FALLBACK_COUNTER));
        assertEquals(0, counters.count(RndvProtocols.PUT_COUNTER));
    }

    @Test
    void aPutTheKernelRefusesAtRunTimeFallsBackToFragmentsFromOffsetZero() {
        byte[] data = pattern(4, 100_000);
        // A key to memory that is not mapped: the kernel answers EFAULT, as it would EPERM/ESRCH at run time.
        ByteBuf bad = packed(new CmaKey(HostId.get(), Cma.pid(), 4096, data.length));
        ChannelFuture[] f = new ChannelFuture[1];
        long id = send(direct(data), f);
        sends.onRtr(ch, id, 903, data.length, bad);
        ch.runPendingTasks();
        assertArrayEquals(data, dataFrames(903, data.length));
        assertTrue(f[0].isSuccess());
        assertEquals(1, putFailures.size());
        CmaException e = assertInstanceOf(CmaException.class, putFailures.get(0));
        assertTrue(e.getMessage().contains("process_vm_writev") && e.getMessage().contains("EFAULT"), e.getMessage());
        assertEquals(1, counters.count(RndvProtocols.PUT_FALLBACK_COUNTER));
        assertEquals(0, sends.size());
    }

    /**
     * The endpoint ends mid-PUT: the operation is cancelled before its next chunk (nothing after the first chunk
     * reaches the receiver's memory), the send fails with the endpoint's cause, and an ATP cancelled tells the
     * receiver it may release its buffer. Both paths: one operation from a direct buffer, chunk operations from heap.
     */
    @Test
    void anEndpointEndingMidPutCancelsItBeforeTheNextChunkAndSendsAtpCancelled() {
        for (boolean heap : new boolean[] {false, true}) {
            int n = (int) (3 * Cma.CHUNK);
            byte[] data = pattern(5, n);
            ByteBuf dst = receiveBuffer(n);
            ChannelFuture[] f = new ChannelFuture[1];
            long id = send(heap ? Unpooled.wrappedBuffer(data) : direct(data), f);
            sends.onRtr(ch, id, 904, n, keyOf(dst));
            IOException cause = new IOException("endpoint failed");
            ChannelFuture aborts = sends.onEndpointClosed(ch, cause);
            assertTrue(aborts != null, "an ATP cancelled was written");
            ch.runPendingTasks(); // the next chunk would run here
            assertArrayEquals(new long[] {904, RndvHeaders.STATUS_CANCELED, 0}, atp());
            assertSame(cause, f[0].cause());
            byte[] got = bytes(dst);
            int chunk = (int) Cma.CHUNK;
            assertArrayEquals(Arrays.copyOf(data, chunk), Arrays.copyOf(got, chunk), "the first chunk ran");
            assertArrayEquals(new byte[n - chunk], Arrays.copyOfRange(got, chunk, n), "nothing after the cancel");
            assertEquals(0, sends.size());
            assertEquals(0, counters.count(RndvProtocols.PUT_COUNTER));
            assertEquals(0, counters.count(RndvProtocols.PUT_FALLBACK_COUNTER), "no fragments either");
        }
    }

    @Test
    void aKeyOfAnotherProcessIsAProtocolErrorAndNothingIsWritten() {
        ChannelFuture[] f = new ChannelFuture[1];
        ByteBuf dst = receiveBuffer(5000);
        long id = send(direct(pattern(6, 5000)), f);
        CmaKey own = CmaKey.of(dst.nioBuffer(0, dst.capacity()));
        ByteBuf other = packed(new CmaKey(own.hostId(), own.pid() + 1, own.address(), own.length()));
        ProtocolException e = assertThrows(ProtocolException.class, () -> sends.onRtr(ch, id, 905, 5000, other));
        assertTrue(e.getMessage().contains("names memory of pid " + (own.pid() + 1)), e.getMessage());
        assertTrue(e.getMessage().contains("RNDV_RTR for rendezvous send " + id), e.getMessage());
        ByteBuf shorter = packed(new CmaKey(own.hostId(), own.pid(), own.address(), 4999));
        e = assertThrows(ProtocolException.class, () -> sends.onRtr(ch, id, 905, 5000, shorter));
        assertTrue(e.getMessage().contains("remote key covers 4999 bytes of a 5000-byte message"), e.getMessage());
        ByteBuf foreign = Unpooled.wrappedBuffer(new byte[40]); // another transport's key, say
        e = assertThrows(ProtocolException.class, () -> sends.onRtr(ch, id, 905, 5000, foreign));
        assertTrue(e.getMessage().contains("cma remote key is 40 bytes, expected 28"), e.getMessage());
        assertArrayEquals(new byte[5000], bytes(dst));
        assertFalse(f[0].isDone(), "failed when the lane closes");
    }

    @Test
    void aKeyCarryingRtrForAnotherSizeFailsTheSendAndTellsTheReceiverNothingWillBeWritten() {
        ChannelFuture[] f = new ChannelFuture[1];
        long id = send(direct(pattern(7, 5000)), f);
        sends.onRtr(ch, id, 906, 4000, keyOf(receiveBuffer(4000)));
        assertArrayEquals(new long[] {906, RndvHeaders.STATUS_CANCELED, 0}, atp());
        assertInstanceOf(ProtocolException.class, f[0].cause());
        ProtocolException again = assertThrows(ProtocolException.class,
                () -> sends.onRtr(ch, id, 906, 5000, null));
        assertTrue(again.getMessage().contains("unknown rendezvous send"), again.getMessage());
    }
}
