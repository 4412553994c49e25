package io.nucx.protocol.amo;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.HoldWrites;
import io.nucx.protocol.ProtocolException;
import io.nucx.transport.AmFrame;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link AmoCodec} on embedded endpoints, on real native memory: the target applies every op and answers with the
 * previous value, refuses what its memory does not allow with a status, and treats malformed frames as protocol
 * errors; the requester refuses bad requests before sending, and completes or fails each atomic by its answer.
 */
class AmoCodecTest {

    /** The worker whose memory the atomics touch, as its peers know it. */
    private static final long TARGET_UUID = 0x77;

    private final Arena arena = Arena.ofShared();
    private final MemorySegment words = arena.allocate(64, 8);
    private final MemoryRegistry memory = new MemoryRegistry(TARGET_UUID);
    /** The endpoint of the worker that owns {@link #memory}; its peer is some other worker. */
    private final EmbeddedChannel target = new EmbeddedChannel(new AmoCodec(memory, () -> 0x55));
    private final AmoCodec requesterCodec = new AmoCodec(new MemoryRegistry(0x55), () -> TARGET_UUID);

    @AfterEach
    void close() {
        assertFalse(target.finishAndReleaseAll());
        arena.close();
    }

    private static AmFrame request(long id, long address, long value, long compare, int region, int op, long secret) {
        ByteBuf h = Unpooled.buffer(AmoHeaders.REQ_LENGTH).writeLongLE(id).writeLongLE(address).writeLongLE(value)
                .writeLongLE(compare).writeIntLE(region).writeByte(op).writeZero(3).writeLongLE(secret);
        return AmFrame.of(AmIds.ATOMIC_REQ, h);
    }

    /** Applies one request at the target; returns {status, previous value} from its reply. */
    private long[] run(RemoteMemoryKey key, long offset, AtomicOp op, long value, long compare) {
        return run(request(9, key.base() + offset, value, compare, key.region(), op.wire(), key.secret()));
    }

    private long[] run(AmFrame req) {
        target.writeInbound(req);
        AmFrame rep = target.readOutbound();
        try {
            ByteBuf h = rep.header();
            assertEquals(AmIds.ATOMIC_REP, rep.amId());
            assertEquals(AmoHeaders.REP_LENGTH, h.readableBytes());
            assertEquals(9, h.getLongLE(h.readerIndex()), "the request's id");
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
        assertEquals(AmoHeaders.STATUS_OK, run(key, 0, AtomicOp.ADD, 1, 0)[0]);
    }

    @Test
    void whatTheMemoryDoesNotAllowIsAnsweredWithAStatusAndTouchesNothing() {
        RemoteMemoryKey key = memory.register(words);
        assertEquals(AmoHeaders.STATUS_OUT_OF_BOUNDS, run(key, 64, AtomicOp.ADD, 1, 0)[0]);
        assertEquals(AmoHeaders.STATUS_MISALIGNED, run(key, 60, AtomicOp.ADD, 1, 0)[0], "alignment comes first");
        assertEquals(AmoHeaders.STATUS_OUT_OF_BOUNDS, run(key, -8, AtomicOp.ADD, 1, 0)[0]);
        assertEquals(AmoHeaders.STATUS_MISALIGNED, run(key, 4, AtomicOp.ADD, 1, 0)[0]);
        RemoteMemoryKey other = new RemoteMemoryKey(TARGET_UUID, key.region() + 1, key.base(), key.length());
        assertEquals(AmoHeaders.STATUS_NO_REGION, run(other, 0, AtomicOp.ADD, 1, 0)[0]);
        assertEquals(AmoHeaders.STATUS_UNKNOWN_OP, run(request(9, key.base(), 1, 0, key.region(), 99, key.secret()))[0]);
        memory.unregister(key);
        assertEquals(AmoHeaders.STATUS_NO_REGION, run(key, 0, AtomicOp.ADD, 1, 0)[0]);
        for (long off = 0; off < 64; off += 8) {
            assertEquals(0, words.get(ValueLayout.JAVA_LONG, off), "nothing written at " + off);
        }
    }

    /**
     * A peer that knows the region id and the address (they are guessable: ids count from 1, addresses are the
     * allocator's) but not the key's secret is answered exactly as for a region that does not exist, and 10,000
     * guesses of the secret touch nothing.
     */
    @Test
    void withoutTheKeysSecretNothingIsFoundOrTouched() {
        RemoteMemoryKey key = memory.register(words);
        assertTrue(key.secret() != 0);
        RemoteMemoryKey guessed = new RemoteMemoryKey(TARGET_UUID, key.region(), key.base(), key.length());
        assertEquals(AmoHeaders.STATUS_NO_REGION, run(guessed, 0, AtomicOp.ADD, 1, 0)[0]);
        SplittableRandom guesses = new SplittableRandom(13);
        for (int i = 0; i < 10_000; i++) {
            assertEquals(AmoHeaders.STATUS_NO_REGION, run(request(9, key.base() + 8 * (i % 8), 1, 0, key.region(),
                    AtomicOp.ADD.wire(), guesses.nextLong()))[0]);
        }
        for (long off = 0; off < 64; off += 8) {
            assertEquals(0, words.get(ValueLayout.JAVA_LONG, off), "nothing written at " + off);
        }
        assertEquals(0, run(key, 0, AtomicOp.ADD, 1, 0)[0], "the key itself works");
        assertEquals(key, RemoteMemoryKey.unpack(key.pack()), "the secret travels with the key");
        assertFalse(key.toString().contains(Long.toHexString(key.secret())), "the secret stays out of logs");
        memory.unregister(guessed);
        assertEquals(0, run(key, 0, AtomicOp.ADD, 1, 0)[0], "unregistering needs the secret too");
    }

    @Test
    void memoryFreedWithoutUnregisteringIsAnsweredInaccessible() {
        Arena gone = Arena.ofShared();
        RemoteMemoryKey key = memory.register(gone.allocate(16, 8));
        gone.close();
        assertEquals(AmoHeaders.STATUS_INACCESSIBLE, run(key, 0, AtomicOp.SWAP, 1, 0)[0]);
    }

    @Test
    void malformedFramesAreProtocolErrorsNamingWhatIsWrong() {
        AmFrame shortReq = AmFrame.of(AmIds.ATOMIC_REQ, Unpooled.buffer(8).writeLongLE(1));
        ProtocolException e = assertThrows(ProtocolException.class, () -> target.writeInbound(shortReq));
        assertTrue(e.getMessage().contains("ATOMIC_REQ header is 8 bytes with 0 payload bytes, expected 48 and none"),
                e.getMessage());
        AmFrame withPayload = request(1, 8, 1, 0, 1, 0, 0);
        AmFrame carrying = AmFrame.of(AmIds.ATOMIC_REQ, 0, withPayload.header().retain(),
                Unpooled.buffer(1).writeByte(1));
        withPayload.release();
        e = assertThrows(ProtocolException.class, () -> target.writeInbound(carrying));
        assertTrue(e.getMessage().contains("with 1 payload bytes"), e.getMessage());
        AmFrame unknownReply = AmFrame.of(AmIds.ATOMIC_REP, Unpooled.buffer(AmoHeaders.REP_LENGTH).writeLongLE(5)
                .writeByte(0).writeLongLE(0));
        e = assertThrows(ProtocolException.class, () -> target.writeInbound(unknownReply));
        assertTrue(e.getMessage().contains("ATOMIC_REP for unknown request 5"), e.getMessage());
        assertEquals(0, shortReq.refCnt());
        assertEquals(0, carrying.refCnt());
        assertEquals(0, unknownReply.refCnt());
        assertNull(target.readOutbound(), "nothing answered");
    }

    @Test
    void framesOfOtherFamiliesPassThrough() {
        AmFrame eager = AmFrame.of(AmIds.EAGER_ONLY, Unpooled.buffer(8).writeLongLE(1));
        target.writeInbound(eager);
        assertSame(eager, target.readInbound());
        eager.release();
        target.writeOutbound("not an atomic");
        assertEquals("not an atomic", target.readOutbound());
    }

    private Promise<Long> write(EmbeddedChannel requester, AtomicOp op, RemoteMemoryKey key, long address, long value,
                                long compare) {
        Promise<Long> result = requester.eventLoop().newPromise();
        requester.writeAndFlush(new AtomicRequest(op, key, address, value, compare, result));
        return result;
    }

    @Test
    void theRequesterRefusesForeignKeysMisalignedAndOutsideAddressesWithoutSending() {
        RemoteMemoryKey key = memory.register(words);
        EmbeddedChannel requester = new EmbeddedChannel(requesterCodec);
        for (Object[] c : new Object[][] {{new RemoteMemoryKey(0x78, key.region(), key.base(), 64), key.base(),
            "the key belongs to worker 78, this endpoint reaches 77"}, {key, key.base() + 4, "not 8-byte aligned"},
            {key, key.base() + 64, "outside region " + key.region()}}) {
            Promise<Long> result = requester.eventLoop().newPromise();
            ChannelFuture sent = requester.writeAndFlush(new AtomicRequest(AtomicOp.ADD, (RemoteMemoryKey) c[0],
                    (Long) c[1], 1, 0, result));
            assertTrue(result.isDone() && !result.isSuccess());
            assertInstanceOf(IllegalArgumentException.class, result.cause());
            assertTrue(result.cause().getMessage().contains((String) c[2]), result.cause().getMessage());
            assertTrue(result.cause().getMessage().startsWith("ADD: "), result.cause().getMessage());
            assertSame(result.cause(), sent.cause(), "the write fails too");
        }
        List<Future<?>> waiting = new ArrayList<>();
        requesterCodec.collectOutstanding(waiting);
        assertEquals(List.of(), waiting);
        assertFalse(requester.finishAndReleaseAll(), "nothing was sent");
    }

    /**
     * An atomic written with a void promise (as a Netty app writes what it does not wait for) goes out and completes
     * its result like any other: the codec listens to the write on a promise of its own.
     */
    @Test
    void anAtomicWrittenWithAVoidPromiseGoesOutAndCompletes() {
        RemoteMemoryKey key = memory.register(words);
        words.set(ValueLayout.JAVA_LONG, 8, 40);
        EmbeddedChannel requester = new EmbeddedChannel(requesterCodec);
        Promise<Long> result = requester.eventLoop().newPromise();
        requester.writeAndFlush(new AtomicRequest(AtomicOp.ADD, key, key.base() + 8, 2, 0, result),
                requester.voidPromise());
        AmFrame req = requester.readOutbound();
        assertNotNull(req, "the request went out");
        target.writeInbound(req);
        requester.writeInbound(target.<Object>readOutbound());
        assertEquals(40, result.getNow());
        assertEquals(42, words.get(ValueLayout.JAVA_LONG, 8));
        assertFalse(requester.finishAndReleaseAll());
    }

    /** The requester's ATOMIC_REQ, applied by the target; its ATOMIC_REP completes the atomic with the old word. */
    @Test
    void anAtomicRoundTripsBetweenTwoCodecs() {
        RemoteMemoryKey key = memory.register(words);
        words.set(ValueLayout.JAVA_LONG, 16, 100);
        EmbeddedChannel requester = new EmbeddedChannel(requesterCodec);
        Promise<Long> add = write(requester, AtomicOp.ADD, key, key.base() + 16, 5, 0);
        Promise<Long> cswap = write(requester, AtomicOp.CSWAP, key, key.base() + 24, 9, 0);
        AmFrame req = requester.readOutbound();
        ByteBuf h = req.header();
        assertEquals(AmIds.ATOMIC_REQ, req.amId());
        assertEquals(AmoHeaders.REQ_LENGTH, h.readableBytes());
        assertEquals(0, req.payload().readableBytes());
        assertEquals(key.base() + 16, h.getLongLE(8), "address");
        assertEquals(5, h.getLongLE(16), "value");
        assertEquals(0, h.getLongLE(24), "compare");
        assertEquals(key.region(), h.getIntLE(32), "region");
        assertEquals(AtomicOp.ADD.wire(), h.getUnsignedByte(36), "op");
        assertEquals(0, h.getMedium(37), "padding");
        List<Future<?>> waiting = new ArrayList<>();
        requesterCodec.collectOutstanding(waiting);
        assertEquals(List.of(add, cswap), waiting, "a graceful close waits for them");
        assertFalse(add.isDone(), "sent, not answered");
        target.writeInbound(req, requester.readOutbound());
        requester.writeInbound(target.readOutbound(), target.readOutbound());
        assertEquals(100, add.getNow());
        assertEquals(105, words.get(ValueLayout.JAVA_LONG, 16));
        assertEquals(0, cswap.getNow());
        assertEquals(9, words.get(ValueLayout.JAVA_LONG, 24));
        assertFalse(requester.finishAndReleaseAll());
    }

    @Test
    void aRefusedAtomicFailsAloneNamingWhatAndWhy() {
        RemoteMemoryKey key = memory.register(words);
        EmbeddedChannel requester = new EmbeddedChannel(requesterCodec);
        Promise<Long> refused = write(requester, AtomicOp.SWAP, key, key.base() + 8, 1, 0);
        memory.unregister(key); // the target gave the region up meanwhile
        target.writeInbound((Object) requester.readOutbound());
        requester.writeInbound((Object) target.readOutbound());
        RemoteAccessException e = assertInstanceOf(RemoteAccessException.class, refused.cause());
        assertTrue(e.getMessage().contains("SWAP at " + Long.toHexString(key.base() + 8) + " of region "
                + key.region()), e.getMessage());
        assertTrue(e.getMessage().contains("no such registered region"), e.getMessage());
        assertTrue(requester.isOpen(), "only this operation failed");
        assertFalse(requester.finishAndReleaseAll());
    }

    @Test
    void anAtomicWhoseWriteFailsOrWhoseEndpointEndsFails() {
        RemoteMemoryKey key = memory.register(words);
        HoldWrites hold = new HoldWrites();
        EmbeddedChannel requester = new EmbeddedChannel(hold, requesterCodec);
        Promise<Long> lost = write(requester, AtomicOp.ADD, key, key.base(), 1, 0);
        Promise<Long> waiting = write(requester, AtomicOp.ADD, key, key.base(), 1, 0);
        IOException cause = new IOException("lane gone");
        hold.promises.get(0).setFailure(cause);
        assertSame(cause, lost.cause(), "never sent: fails at once");
        hold.promises.get(1).setSuccess();
        IllegalStateException end = new IllegalStateException("endpoint ended");
        requesterCodec.endpointEnded(end);
        assertSame(end, waiting.cause());
        List<Future<?>> left = new ArrayList<>();
        requesterCodec.collectOutstanding(left);
        assertEquals(List.of(), left);
        List<String> described = new ArrayList<>();
        requesterCodec.describeRequests(described);
        assertEquals(List.of("amo: 0 atomics waiting"), described);
        hold.releaseAll();
        assertFalse(requester.finishAndReleaseAll());
    }

    @Test
    void keysPackAndRegistrationRefusesNonsense() {
        RemoteMemoryKey key = memory.register(words);
        assertEquals(key, RemoteMemoryKey.fromHex(key.toHex()));
        assertEquals(TARGET_UUID, key.workerUuid());
        assertThrows(IllegalArgumentException.class, () -> RemoteMemoryKey.unpack(new byte[27]));
        assertThrows(IllegalArgumentException.class, () -> memory.register(MemorySegment.ofArray(new long[4])));
        assertThrows(IllegalArgumentException.class, () -> memory.register(words.asSlice(4, 0)));
        // a region for put and get need not be aligned; atomics check each word's alignment (misaligned: refused)
        RemoteMemoryKey unaligned = memory.register(words.asSlice(4, 16));
        assertEquals(words.address() + 4, unaligned.base());
        memory.unregister(unaligned);
        try (Arena confined = Arena.ofConfined()) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> memory.register(confined.allocate(64, 8)));
            assertTrue(e.getMessage().contains("confined"), e.getMessage());
        }
    }
}
