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
import io.nucx.transport.cma.CmaKey;
import io.nucx.transport.rma.RmaLane;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.channels.ClosedChannelException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The RTS-with-remote-key format, and the receive side of {@code rndv/get/zcopy} in {@link TagMatcher}, on an
 * embedded channel's loop with a real {@link Cma} reading this process's own memory (the kernel treats it as any
 * peer): reads into direct, heap and allocated buffers, across chunk boundaries, truncation, a failed read falling
 * back to RTR, and the sender going away mid-read.
 */
class RndvGetReceiveTest {

    private EmbeddedChannel ch;
    /** The RMA lane the worker would give: a cma channel to this very process, or null when cma cannot run here. */
    private CmaChannel cma;
    private TagMatcher matcher;
    private final ProtocolCounters counters = new ProtocolCounters();
    private final List<String> replies = new ArrayList<>();
    private final List<ByteBuf> held = new ArrayList<>();

    @BeforeEach
    void setUp() {
        ch = new EmbeddedChannel();
        if (Cma.availability().isAvailable()) {
            cma = CmaChannel.toProcess(Cma.pid());
            ch.eventLoop().register(cma);
        }
        matcher = new TagMatcher(ch.eventLoop(), ByteBufAllocator.DEFAULT, 1 << 30, (c, t) -> false, new TagReplies() {
            @Override
            public void sendRtr(Channel ep, long senderReqId, long receiverReqId, long size) {
                replies.add("RTR " + senderReqId + " " + receiverReqId + " " + size);
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
            public RmaLane rndvGetLane(Channel ep) {
                return cma;
            }

            @Override
            public void rndvGetFailed(Channel ep, Throwable cause) {
                replies.add("FAILED " + cause.getMessage());
            }
        }, counters);
    }

    @AfterEach
    void tearDown() {
        matcher.close(new ClosedChannelException());
        held.forEach(ByteBuf::release);
        if (cma != null) {
            cma.close();
            ch.runPendingTasks();
        }
        assertFalse(ch.finishAndReleaseAll());
    }

    private static byte[] pattern(long seed, int n) {
        byte[] b = new byte[n];
        new SplittableRandom(seed).nextBytes(b);
        return b;
    }

    /** A "sender's" buffer in this process's native memory, released after the test. */
    private ByteBuf source(byte[] data) {
        ByteBuf b = ByteBufAllocator.DEFAULT.directBuffer(data.length).writeBytes(data);
        held.add(b);
        return b;
    }

    private static byte[] bytes(ByteBuf b) {
        byte[] a = new byte[b.readableBytes()];
        b.getBytes(b.readerIndex(), a);
        return a;
    }

    // ------------------------------------------------------------------ header format

    /** A cma key packed as the sender's lane packs it, as it arrives in a header. */
    private static ByteBuf packed(CmaKey key) {
        return Unpooled.wrappedBuffer(key.pack());
    }

    @Test
    void anRtsWithARemoteKeyIsTheRtsFollowedByTheKeyLengthAndTheKey() {
        CmaKey key = new CmaKey(0x1122334455667788L, 4242, 0x7f00_0000_1000L, 5000);
        ByteBuf h = RndvHeaders.writeRts(Unpooled.buffer(), 9, 17, 5000, key.pack());
        try {
            assertEquals(RndvHeaders.rtsLength(key.pack()), h.readableBytes());
            assertEquals(54, h.readableBytes(), "24 + 2 + 28");
            assertEquals(9, h.getLongLE(0), "tag");
            assertEquals(17, h.getLongLE(8), "sender request id");
            assertEquals(5000, h.getLongLE(16), "size");
            assertEquals(28, h.getUnsignedShortLE(24), "key length");
            assertEquals(0x1122334455667788L, h.getLongLE(26), "host id");
            assertEquals(4242, h.getIntLE(34), "pid");
            assertEquals(0x7f00_0000_1000L, h.getLongLE(38), "address");
            assertEquals(5000, h.getLongLE(46), "length");
            assertArrayEquals(key.pack(), bytes(RndvHeaders.readRtsKey(h)));
            assertEquals(0, h.readerIndex(), "the header is left as it was");
        } finally {
            h.release();
        }
        ByteBuf plain = RndvHeaders.writeRts(Unpooled.buffer(), 9, 17, 5000, null);
        try {
            assertEquals(RndvHeaders.RTS_LENGTH, plain.readableBytes());
            assertNull(RndvHeaders.readRtsKey(plain));
        } finally {
            plain.release();
        }
    }

    @Test
    void malformedRtsHeadersAreProtocolErrorsNamingWhatIsWrong() {
        CmaKey key = new CmaKey(1, 2, 0x1000, 5000);
        assertMalformed(h -> h.setShortLE(24, 27), "remote key length is 27, but the header has 28 bytes after it");
        assertMalformed(h -> h.setShortLE(24, 0xffff), "remote key length is 65535, expected 1 to 1024");
        assertMalformed(h -> h.setShortLE(24, 0), "remote key length is 0");
        assertMalformed(h -> h.writeByte(0), "the header has 29 bytes after it (55 in all)");
        assertMalformed(h -> h.writerIndex(25), "header is 25 bytes");
        // the good one parses
        ByteBuf ok = RndvHeaders.writeRts(Unpooled.buffer(), 1, 2, 5000, key.pack());
        try {
            assertArrayEquals(key.pack(), bytes(RndvHeaders.readRtsKey(ok)));
        } finally {
            ok.release();
        }
    }

    /** What the key says is checked by the endpoint's RMA lane when the RTS arrives: a bad one closes that lane. */
    @Test
    void anRtsWithAKeyTheLaneRefusesOrNotCoveringTheMessageIsAProtocolError() {
        assumeTrue(cma != null, () -> Cma.availability().reason());
        ByteBuf src = source(pattern(8, 5000));
        CmaKey good = CmaKey.of(src.nioBuffer());
        assertRefused(new CmaKey(good.hostId(), good.pid(), good.address(), 4999),
                "remote key covers 4999 bytes of a 5000-byte message");
        assertRefused(new CmaKey(good.hostId(), good.pid() + 1, good.address(), 5000),
                "names memory of pid " + (good.pid() + 1) + "; this lane's peer is pid " + good.pid());
        assertRefused(new CmaKey(good.hostId() + 1, good.pid(), good.address(), 5000), "names host id");
        ProtocolException e = assertThrows(ProtocolException.class,
                () -> matcher.onRts(ch, 1, 2, 5000, Unpooled.wrappedBuffer(new byte[13])));
        assertTrue(e.getMessage().contains("cma remote key is 13 bytes, expected 28"), e.getMessage());
        assertEquals(0, matcher.unexpectedCount(), "nothing kept of a refused RTS");
        assertEquals(List.of(), replies);
    }

    private void assertRefused(CmaKey key, String expected) {
        ProtocolException e = assertThrows(ProtocolException.class, () -> matcher.onRts(ch, 1, 2, 5000, packed(key)));
        assertTrue(e.getMessage().contains(expected), e.getMessage());
        assertTrue(e.getMessage().contains("RNDV_RTS"), e.getMessage());
    }

    private static void assertMalformed(java.util.function.Consumer<ByteBuf> damage, String expected) {
        ByteBuf h = RndvHeaders.writeRts(Unpooled.buffer(), 1, 2, 5000, new CmaKey(1, 2, 0x1000, 5000).pack());
        try {
            damage.accept(h);
            ProtocolException e = assertThrows(ProtocolException.class, () -> RndvHeaders.readRtsKey(h));
            assertTrue(e.getMessage().contains(expected), e.getMessage());
            assertTrue(e.getMessage().contains("RNDV_RTS"), e.getMessage());
        } finally {
            h.release();
        }
    }

    // ------------------------------------------------------------------ receive side

    private Promise<TagMessage> post(long tag, ByteBuf into) {
        Promise<TagMessage> p = ch.eventLoop().newPromise();
        matcher.post(tag, -1L, into, p);
        return p;
    }

    private byte[] received(Promise<TagMessage> p) {
        ch.runPendingTasks(); // the later chunks run as loop tasks
        assertTrue(p.isDone(), "receive not complete; replies " + replies);
        assertTrue(p.isSuccess(), () -> "receive failed: " + p.cause());
        TagMessage m = p.getNow();
        try {
            return bytes(m.content());
        } finally {
            m.release();
        }
    }

    @Test
    void aMatchedRtsIsReadStraightIntoADirectReceiveBufferAcrossChunksThenAts() {
        assumeTrue(cma != null, () -> Cma.availability().reason());
        int n = (int) (2 * Cma.CHUNK + 12345);
        byte[] data = pattern(1, n);
        ByteBuf src = source(data);
        ByteBuf into = ByteBufAllocator.DEFAULT.directBuffer(n);
        held.add(into);
        Promise<TagMessage> p = post(5, into);
        matcher.onRts(ch, 5, 77, n, packed(CmaKey.of(src.nioBuffer())));
        assertArrayEquals(data, received(p));
        assertEquals(n, into.writerIndex(), "the user's buffer holds the message");
        assertEquals(List.of("ATS 77 0"), replies);
        assertEquals(1, counters.count(RndvProtocols.RECV_GET_COUNTER));
        assertEquals(0, matcher.reassemblyCount());
    }

    @Test
    void anUnexpectedRtsIsReadWhenAReceiveIsPostedIntoAHeapBufferThroughABounceBuffer() {
        assumeTrue(cma != null, () -> Cma.availability().reason());
        int n = (int) Cma.CHUNK + 1;
        byte[] data = pattern(2, n);
        ByteBuf src = source(data);
        matcher.onRts(ch, 6, 78, n, packed(CmaKey.of(src.nioBuffer())));
        assertEquals(1, matcher.unexpectedCount());
        assertEquals(List.of(), replies, "nothing read before a receive matches");
        ByteBuf heap = Unpooled.buffer(n);
        held.add(heap);
        Promise<TagMessage> p = post(6, heap);
        assertArrayEquals(data, received(p));
        assertEquals(List.of("ATS 78 0"), replies);
    }

    @Test
    void aReceiveWithoutABufferGetsAnAllocatedOne() {
        assumeTrue(cma != null, () -> Cma.availability().reason());
        byte[] data = pattern(3, 100_000);
        Promise<TagMessage> p = post(7, null);
        matcher.onRts(ch, 7, 79, data.length, packed(CmaKey.of(source(data).nioBuffer())));
        assertArrayEquals(data, received(p));
    }

    @Test
    void aTooSmallReceiveIsTruncatedAndTheSenderToldWithoutReading() {
        byte[] data = pattern(4, 5000);
        ByteBuf small = Unpooled.directBuffer(100);
        held.add(small);
        Promise<TagMessage> p = post(8, small);
        matcher.onRts(ch, 8, 80, data.length, packed(CmaKey.of(source(data).nioBuffer())));
        assertInstanceOf(MessageTruncatedException.class, p.cause());
        assertEquals(List.of("ATS 80 -9"), replies);
        assertEquals(0, small.writerIndex());
        assertEquals(0, counters.count(RndvProtocols.RECV_GET_COUNTER));
    }

    @Test
    void aFailedReadFallsBackToRtrAndTheDataFragmentsCompleteTheReceive() {
        assumeTrue(cma != null, () -> Cma.availability().reason());
        byte[] data = pattern(5, 3000);
        // A key to memory that is not mapped: the kernel answers EFAULT, as it would EPERM/ESRCH at run time.
        ByteBuf bad = packed(new CmaKey(HostId.get(), Cma.pid(), 4096, data.length));
        Promise<TagMessage> p = post(9, null);
        matcher.onRts(ch, 9, 81, data.length, bad);
        assertEquals(2, replies.size(), replies.toString());
        assertTrue(replies.get(0).startsWith("FAILED process_vm_readv") && replies.get(0).contains("EFAULT"),
                replies.get(0));
        String[] rtr = replies.get(1).split(" ");
        assertEquals("RTR", rtr[0]);
        assertEquals("81", rtr[1]);
        assertEquals(Integer.toString(data.length), rtr[3]);
        assertFalse(p.isDone(), "the message is not failed");
        long receiverReq = Long.parseLong(rtr[2]);
        matcher.onRndvData(ch, receiverReq, 0, Unpooled.wrappedBuffer(data, 0, 2000));
        matcher.onRndvData(ch, receiverReq, 2000, Unpooled.wrappedBuffer(data, 2000, 1000));
        assertArrayEquals(data, received(p));
        assertEquals(1, counters.count(RndvProtocols.RECV_GET_FALLBACK_COUNTER));
        assertEquals(0, counters.count(RndvProtocols.RECV_GET_COUNTER));
    }

    @Test
    void anEndpointThatMayNotReadAsksByRtr() {
        CmaChannel saved = cma;
        cma = null; // what the worker answers for an endpoint whose cma lane the kernel refused
        try {
            byte[] data = pattern(6, 3000);
            Promise<TagMessage> p = post(10, null);
            matcher.onRts(ch, 10, 82, data.length, packed(new CmaKey(HostId.get(), Cma.pid(), 4096, data.length)));
            assertEquals(1, replies.size());
            assertTrue(replies.get(0).startsWith("RTR 82 "), replies.toString());
            assertEquals(1, counters.count(RndvProtocols.RECV_GET_FALLBACK_COUNTER));
            assertFalse(p.isDone());
        } finally {
            cma = saved;
        }
    }

    @Test
    void theSenderGoingAwayMidReadFailsTheReceiveAndReleasesEverything() {
        assumeTrue(cma != null, () -> Cma.availability().reason());
        int n = (int) (3 * Cma.CHUNK);
        byte[] data = pattern(7, n);
        ByteBuf heap = Unpooled.buffer(n); // bounce path: a pooled direct chunk is held between chunks
        held.add(heap);
        Promise<TagMessage> p = post(11, heap);
        matcher.onRts(ch, 11, 83, n, packed(CmaKey.of(source(data).nioBuffer())));
        assertFalse(p.isDone(), "one chunk per loop turn");
        matcher.onSourceClosed(ch, new IOException("lane closed"));
        ch.runPendingTasks(); // the next chunk finds the read cancelled
        assertTrue(p.isDone() && !p.isSuccess());
        assertTrue(p.cause().getMessage().contains("went away"), p.cause().getMessage());
        assertEquals(List.of(), replies, "no ATS to a peer that is gone");
        assertEquals(0, matcher.reassemblyCount());
        assertTrue(Arrays.equals(new byte[0], bytes(heap)), "nothing published into the user's buffer");
    }
}
