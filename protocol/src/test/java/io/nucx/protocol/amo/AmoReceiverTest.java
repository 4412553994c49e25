package io.nucx.protocol.amo;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.ProtocolException;
import io.nucx.transport.AmFrame;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The atomic protocol on real native memory: every op, refusals answered with a status, malformed frames. */
class AmoReceiverTest {

    private final Arena arena = Arena.ofShared();
    private final MemorySegment words = arena.allocate(64, 8);
    private final MemoryRegistry memory = new MemoryRegistry(0x77);
    private final AtomicRequests requests = new AtomicRequests();
    private final List<AmFrame> replies = new ArrayList<>();
    private final AmoReceiver receiver = new AmoReceiver(memory, requests, (ch, f) -> replies.add(f));
    private final EmbeddedChannel source = new EmbeddedChannel();

    @AfterEach
    void close() {
        replies.forEach(AmFrame::release);
        source.finishAndReleaseAll();
        arena.close();
    }

    private static AmFrame request(long id, long address, long value, long compare, int region, int op) {
        ByteBuf h = Unpooled.buffer(AmoHeaders.REQ_LENGTH).writeLongLE(id).writeLongLE(address).writeLongLE(value)
                .writeLongLE(compare).writeIntLE(region).writeByte(op).writeZero(3);
        return AmFrame.of(AmIds.ATOMIC_REQ, h);
    }

    /** Applies one request; returns {status, previous value} from the reply. */
    private long[] run(RemoteMemoryKey key, long offset, AtomicOp op, long value, long compare) {
        receiver.onFrame(source, request(9, key.base() + offset, value, compare, key.region(), op.wire()));
        AmFrame rep = replies.remove(replies.size() - 1);
        try {
            ByteBuf h = rep.header();
            assertEquals(AmIds.ATOMIC_REP, rep.amId());
            assertEquals(9, h.getLongLE(h.readerIndex()));
            return new long[] {h.getUnsignedByte(h.readerIndex() + 8), h.getLongLE(h.readerIndex() + 9)};
        } finally {
            rep.release();
        }
    }

    @Test
    void everyOperationReturnsThePreviousValueAndChangesTheWord() {
        RemoteMemoryKey key = memory.register(words);
        words.set(ValueLayout.JAVA_LONG, 8, 0b1100);
        assertEquals(0b1100, run(key, 8, AtomicOp.ADD, 3, 0)[1]);
        assertEquals(0b1111, words.get(ValueLayout.JAVA_LONG, 8));
        assertEquals(0b1111, run(key, 8, AtomicOp.AND, 0b0101, 0)[1]);
        assertEquals(0b0101, run(key, 8, AtomicOp.OR, 0b1000, 0)[1]);
        assertEquals(0b1101, run(key, 8, AtomicOp.XOR, 0b0001, 0)[1]);
        assertEquals(0b1100, run(key, 8, AtomicOp.SWAP, 42, 0)[1]);
        assertEquals(42, run(key, 8, AtomicOp.CSWAP, 7, 41)[1], "compare fails: unchanged");
        assertEquals(42, words.get(ValueLayout.JAVA_LONG, 8));
        assertEquals(42, run(key, 8, AtomicOp.CSWAP, 7, 42)[1]);
        assertEquals(7, words.get(ValueLayout.JAVA_LONG, 8));
        assertEquals(0, run(key, 56, AtomicOp.ADD, 1, 0)[1], "the last word");
    }

    @Test
    void whatTheMemoryDoesNotAllowIsAnsweredWithAStatusAndTouchesNothing() {
        RemoteMemoryKey key = memory.register(words);
        assertEquals(AmoHeaders.STATUS_OUT_OF_BOUNDS, run(key, 64, AtomicOp.ADD, 1, 0)[0]);
        assertEquals(AmoHeaders.STATUS_OUT_OF_BOUNDS, run(key, -8, AtomicOp.ADD, 1, 0)[0]);
        assertEquals(AmoHeaders.STATUS_MISALIGNED, run(key, 4, AtomicOp.ADD, 1, 0)[0]);
        RemoteMemoryKey other = new RemoteMemoryKey(0x77, key.region() + 1, key.base(), key.length());
        assertEquals(AmoHeaders.STATUS_NO_REGION, run(other, 0, AtomicOp.ADD, 1, 0)[0]);
        receiver.onFrame(source, request(9, key.base(), 1, 0, key.region(), 99));
        AmFrame rep = replies.remove(0);
        assertEquals(AmoHeaders.STATUS_UNKNOWN_OP, rep.header().getUnsignedByte(8));
        rep.release();
        memory.unregister(key);
        assertEquals(AmoHeaders.STATUS_NO_REGION, run(key, 0, AtomicOp.ADD, 1, 0)[0]);
        for (long off = 0; off < 64; off += 8) {
            assertEquals(0, words.get(ValueLayout.JAVA_LONG, off), "nothing written at " + off);
        }
    }

    @Test
    void malformedFramesAreProtocolErrors() {
        AmFrame shortReq = AmFrame.of(AmIds.ATOMIC_REQ, Unpooled.buffer(8).writeLongLE(1));
        ProtocolException e = assertThrows(ProtocolException.class, () -> receiver.onFrame(source, shortReq));
        assertTrue(e.getMessage().contains("ATOMIC_REQ header is 8 bytes"), e.getMessage());
        AmFrame unknownReply = AmFrame.of(AmIds.ATOMIC_REP, Unpooled.buffer(AmoHeaders.REP_LENGTH).writeLongLE(5)
                .writeByte(0).writeLongLE(0));
        e = assertThrows(ProtocolException.class, () -> receiver.onFrame(source, unknownReply));
        assertTrue(e.getMessage().contains("unknown request 5"), e.getMessage());
        assertEquals(0, shortReq.refCnt());
        assertEquals(0, unknownReply.refCnt());
    }

    @Test
    void theSenderRefusesForeignKeysMisalignedAndOutsideAddressesWithoutSending() {
        RemoteMemoryKey key = memory.register(words);
        EmbeddedChannel ch = new EmbeddedChannel(new AmoSendHandler(requests, () -> 0x77));
        for (Object[] c : new Object[][] {{new RemoteMemoryKey(0x78, key.region(), key.base(), 64), key.base(),
                "belongs to worker 78"}, {key, key.base() + 4, "not 8-byte aligned"}, {key, key.base() + 64,
                "outside region"}}) {
            io.netty.util.concurrent.Promise<Long> result = ch.eventLoop().newPromise();
            ch.pipeline().writeAndFlush(new AtomicRequest(AtomicOp.ADD, (RemoteMemoryKey) c[0], (Long) c[1], 1, 0,
                    result));
            assertTrue(result.isDone() && !result.isSuccess());
            assertInstanceOf(IllegalArgumentException.class, result.cause());
            assertTrue(result.cause().getMessage().contains((String) c[2]), result.cause().getMessage());
        }
        assertFalse(ch.finishAndReleaseAll(), "nothing was sent");
        assertEquals(0, requests.size());
    }

    @Test
    void keysPackAndRefuseNonsense() {
        RemoteMemoryKey key = memory.register(words);
        assertEquals(key, RemoteMemoryKey.fromHex(key.toHex()));
        assertThrows(IllegalArgumentException.class, () -> RemoteMemoryKey.unpack(new byte[27]));
        assertThrows(IllegalArgumentException.class, () -> memory.register(MemorySegment.ofArray(new long[4])));
        assertThrows(IllegalArgumentException.class, () -> memory.register(words.asSlice(4, 16)));
        try (Arena confined = Arena.ofConfined()) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> memory.register(confined.allocate(64, 8)));
            assertTrue(e.getMessage().contains("confined"), e.getMessage());
        }
    }
}
