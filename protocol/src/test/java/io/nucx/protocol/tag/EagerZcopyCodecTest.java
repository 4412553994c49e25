package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelPromise;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.EndpointConfig;
import io.nucx.protocol.HoldWrites;
import io.nucx.protocol.ProtocolException;
import io.nucx.protocol.ProtocolSettings;
import io.nucx.protocol.TestEndpoint;
import io.nucx.protocol.WorkerProtocols;
import io.nucx.protocol.select.ProtoCandidate;
import io.nucx.transport.AmFrame;
import io.nucx.transport.Capability;
import io.nucx.transport.IfaceAttributes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.channels.ClosedChannelException;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The eager zero-copy protocols of {@link EagerCodec}, and the copy-in of its copy protocols, on a tcp-like lane: max
 * short 128, max bcopy 4096, AM_ZCOPY, payloads up to 1 KiB copied by the transport. NUCX_ZCOPY_THRESH is 2 KiB here,
 * so 2048..4080 bytes of native memory go as {@code egr/single/zcopy} and more as {@code egr/multi/zcopy}.
 */
class EagerZcopyCodecTest {

    private static final int MAX_BCOPY = 4096;
    private static final int COPY_MAX = 1024;
    private static final int ZCOPY_THRESH = 2048;

    private WorkerProtocols worker;
    private EagerCodec codec;

    private static EndpointConfig lane(boolean amZcopy, int copyMax) {
        EnumSet<Capability> caps = EnumSet.of(Capability.AM_SHORT, Capability.AM_BCOPY);
        if (amZcopy) {
            caps.add(Capability.AM_ZCOPY);
        }
        return new EndpointConfig("test/lo", new IfaceAttributes(caps, 128, MAX_BCOPY, 64, 1e-6, 0, 1e9, 0, 1e-7, 0,
                0, copyMax));
    }

    private static ProtocolSettings settings(long zcopyThresh) {
        return TestEndpoint.settings(1 << 20, zcopyThresh, RndvScheme.AUTO, EagerProtocols.ALL);
    }

    /** An endpoint on {@code lane} whose codec sits above {@code below}. */
    private EmbeddedChannel channel(EndpointConfig lane, long zcopyThresh, ChannelHandler... below) {
        EmbeddedChannel ch = new EmbeddedChannel();
        worker = TestEndpoint.worker(ch, settings(zcopyThresh));
        codec = new EagerCodec(new TestEndpoint(ch, lane), worker);
        ch.pipeline().addLast(below);
        ch.pipeline().addLast(codec);
        return ch;
    }

    private EmbeddedChannel tcpLike(ChannelHandler... below) {
        return channel(lane(true, COPY_MAX), ZCOPY_THRESH, below);
    }

    /** A receiving endpoint (its own worker) on the same kind of lane. */
    private static EmbeddedChannel receiver() {
        EmbeddedChannel rx = new EmbeddedChannel();
        rx.pipeline().addLast(new EagerCodec(new TestEndpoint(rx, lane(true, COPY_MAX)),
                TestEndpoint.worker(rx, settings(ZCOPY_THRESH))));
        return rx;
    }

    private static byte[] content(long seed, int length) {
        byte[] b = new byte[length];
        new SplittableRandom(seed).nextBytes(b);
        return b;
    }

    private static ByteBuf direct(byte[] bytes) {
        return Unpooled.directBuffer(bytes.length).writeBytes(bytes);
    }

    private static List<AmFrame> drain(EmbeddedChannel ch) {
        List<AmFrame> frames = new ArrayList<>();
        for (Object o; (o = ch.readOutbound()) != null; ) {
            frames.add((AmFrame) o);
        }
        return frames;
    }

    private static AmFrame ack(long id) {
        return AmFrame.of(AmIds.EAGER_ZCOPY_ACK, Unpooled.buffer(8).writeLongLE(id));
    }

    private static long longAt(ByteBuf header, int offset) {
        return header.getLongLE(header.readerIndex() + offset);
    }

    @Test
    void aSingleZcopyFrameIsASliceOfTheUsersBufferAndTheSendCompletesOnTheAcknowledgement() {
        EmbeddedChannel ch = tcpLike();
        byte[] bytes = content(1, 3000);
        ByteBuf buf = direct(bytes);
        buf.retain(); // ours, to look at the memory the frame sends from
        try {
            ChannelFuture send = ch.writeAndFlush(new TagMessage(0x51, buf));
            List<AmFrame> frames = drain(ch);
            assertEquals(1, frames.size());
            AmFrame f = frames.get(0);
            try {
                assertEquals(AmIds.EAGER_ZCOPY_ONLY, f.amId());
                assertEquals(EagerHeaders.ZCOPY_ONLY_LENGTH, f.header().readableBytes());
                assertEquals(0x51, longAt(f.header(), EagerHeaders.TAG_OFFSET));
                long id = longAt(f.header(), EagerHeaders.ONLY_LENGTH);
                buf.setByte(0, ~bytes[0]);
                assertEquals((byte) ~bytes[0], f.payload().getByte(f.payload().readerIndex()),
                        "the frame sends from the user's memory, no copy");
                assertFalse(send.isDone(), "written, but not acknowledged yet");
                assertEquals(1, codec.zcopyWaiting());
                ch.writeInbound(ack(id));
                assertTrue(send.isSuccess());
                assertEquals(0, codec.zcopyWaiting());
            } finally {
                f.release();
            }
        } finally {
            buf.release();
        }
        assertEquals(0, buf.refCnt());
        assertEquals(1, worker.counters().count(EagerProtocols.SINGLE_ZCOPY.name()));
        assertFalse(ch.finish());
    }

    /**
     * Multi-fragment zero-copy through a receiving codec: EAGER_ZCOPY_FIRST carries the request id, EAGER_MIDDLE
     * fragments follow, the receiver acknowledges only after the last byte (not before, and without any receive
     * posted), and the acknowledgement completes the send.
     */
    @Test
    void multiZcopyIsAcknowledgedWhenTheLastFragmentArrivesEvenUnmatched() {
        EmbeddedChannel tx = tcpLike();
        EmbeddedChannel rx = new EmbeddedChannel();
        WorkerProtocols rxWorker = TestEndpoint.worker(rx, settings(ZCOPY_THRESH));
        rx.pipeline().addLast(new EagerCodec(new TestEndpoint(rx, lane(true, COPY_MAX)), rxWorker));
        byte[] bytes = content(2, 10_000);
        ChannelFuture send = tx.writeAndFlush(new TagMessage(0x52, direct(bytes)));
        List<AmFrame> frames = drain(tx);
        int frameCount = 1 + (10_000 - (MAX_BCOPY - EagerHeaders.ZCOPY_FIRST_LENGTH) + MAX_BCOPY
                - EagerHeaders.MIDDLE_LENGTH - 1) / (MAX_BCOPY - EagerHeaders.MIDDLE_LENGTH);
        assertEquals(frameCount, frames.size());
        AmFrame first = frames.get(0);
        assertEquals(AmIds.EAGER_ZCOPY_FIRST, first.amId());
        assertEquals(EagerHeaders.ZCOPY_FIRST_LENGTH, first.header().readableBytes());
        assertEquals(10_000, longAt(first.header(), EagerHeaders.FIRST_TOTAL_OFFSET));
        long msgId = longAt(first.header(), EagerHeaders.FIRST_MSG_ID_OFFSET);
        long id = longAt(first.header(), EagerHeaders.FIRST_LENGTH);
        for (int i = 0; i < frames.size(); i++) {
            if (i > 0) {
                assertEquals(AmIds.EAGER_MIDDLE, frames.get(i).amId());
                assertEquals(msgId, longAt(frames.get(i).header(), EagerHeaders.MIDDLE_MSG_ID_OFFSET));
            }
            assertNull(rx.readOutbound(), "no acknowledgement before the last fragment");
            rx.writeInbound(frames.get(i));
        }
        AmFrame sentAck = rx.readOutbound();
        assertEquals(AmIds.EAGER_ZCOPY_ACK, sentAck.amId());
        assertEquals(EagerHeaders.ZCOPY_ACK_LENGTH, sentAck.header().readableBytes());
        assertEquals(id, longAt(sentAck.header(), 0), "acknowledged on arrival, though no receive matched it yet");
        assertNull(rx.readOutbound());
        assertFalse(send.isDone());
        tx.writeInbound(sentAck);
        assertTrue(send.isSuccess());
        assertEquals(1, worker.counters().count(EagerProtocols.MULTI_ZCOPY.name()));

        Promise<TagMessage> r = rx.eventLoop().newPromise();
        rxWorker.matcher().post(new TagReceive(0x52, -1L, null, r));
        TagMessage m = r.getNow();
        try {
            byte[] got = new byte[m.content().readableBytes()];
            m.content().getBytes(m.content().readerIndex(), got);
            assertArrayEquals(bytes, got);
        } finally {
            m.release();
        }
        assertFalse(tx.finish());
        assertFalse(rx.finish());
    }

    @Test
    void aZcopyOnlyFrameIsAcknowledgedOnArrivalAndAMalformedOneClosesTheLane() {
        EmbeddedChannel rx = new EmbeddedChannel();
        WorkerProtocols rxWorker = TestEndpoint.worker(rx, settings(ZCOPY_THRESH));
        rx.pipeline().addLast(new EagerCodec(new TestEndpoint(rx, lane(true, COPY_MAX)), rxWorker));
        rx.writeInbound(AmFrame.of(AmIds.EAGER_ZCOPY_ONLY, 0, Unpooled.buffer(16).writeLongLE(9).writeLongLE(77),
                Unpooled.wrappedBuffer(new byte[2000])));
        AmFrame sentAck = rx.readOutbound();
        assertEquals(AmIds.EAGER_ZCOPY_ACK, sentAck.amId());
        assertEquals(77, longAt(sentAck.header(), 0));
        sentAck.release();
        assertEquals(1, rxWorker.matcher().unexpectedCount(), "arrived, not matched");

        AmFrame shortHeader = AmFrame.of(AmIds.EAGER_ZCOPY_ONLY, 0, Unpooled.buffer(8).writeLongLE(9),
                Unpooled.wrappedBuffer(new byte[10]));
        ProtocolException e = assertThrows(ProtocolException.class, () -> rx.writeInbound(shortHeader));
        assertTrue(e.getMessage().contains("EAGER_ZCOPY_ONLY header is 8 bytes, expected 16"), e.getMessage());
        assertEquals(0, shortHeader.refCnt());
        AmFrame negative = AmFrame.of(AmIds.EAGER_ZCOPY_FIRST, 0, Unpooled.buffer(32).writeLongLE(9)
                .writeLongLE(5000).writeLongLE(3).writeLongLE(-4), Unpooled.wrappedBuffer(new byte[10]));
        e = assertThrows(ProtocolException.class, () -> rx.writeInbound(negative));
        assertTrue(e.getMessage().contains("EAGER_ZCOPY_FIRST with request id -4"), e.getMessage());
        assertEquals(0, negative.refCnt());
        assertNull(rx.readOutbound(), "nothing acknowledged for malformed frames");
        rxWorker.matcher().close(new ClosedChannelException());
        assertFalse(rx.finish());
    }

    @Test
    void anAcknowledgementNobodyWaitsForIsAProtocolErrorNamingTheId() {
        EmbeddedChannel ch = tcpLike();
        EagerCodec sender = codec;
        EmbeddedChannel other = receiver(); // another endpoint: its table does not hold this endpoint's ids
        ChannelFuture send = ch.writeAndFlush(new TagMessage(1, direct(content(3, 3000))));
        List<AmFrame> frames = drain(ch);
        long id = longAt(frames.get(0).header(), EagerHeaders.ONLY_LENGTH);
        frames.forEach(AmFrame::release);
        ProtocolException e = assertThrows(ProtocolException.class, () -> ch.writeInbound(ack(id + 1)));
        assertTrue(e.getMessage().contains("EAGER_ZCOPY_ACK for unknown zero-copy send " + (id + 1)), e.getMessage());
        e = assertThrows(ProtocolException.class, () -> other.writeInbound(ack(id)));
        assertTrue(e.getMessage().contains("unknown zero-copy send " + id), "another endpoint's id: "
                + e.getMessage());
        AmFrame longAck = AmFrame.of(AmIds.EAGER_ZCOPY_ACK, Unpooled.buffer(9).writeLongLE(id).writeByte(0));
        e = assertThrows(ProtocolException.class, () -> ch.writeInbound(longAck));
        assertTrue(e.getMessage().contains("EAGER_ZCOPY_ACK header is 9 bytes, expected 8"), e.getMessage());
        assertFalse(send.isDone(), "a bad acknowledgement completes nothing");
        sender.endpointEnded(new ClosedChannelException());
        assertTrue(send.cause() instanceof ClosedChannelException);
        assertEquals(0, sender.zcopyWaiting());
        assertFalse(ch.finish());
        assertFalse(other.finish());
    }

    @Test
    void aFailedWriteFailsTheZcopySendAtOnceAndALateAcknowledgementFindsNothing() {
        HoldWrites hold = new HoldWrites();
        EmbeddedChannel ch = tcpLike(hold);
        ByteBuf buf = direct(content(4, 10_000));
        ChannelFuture send = ch.writeAndFlush(new TagMessage(1, buf));
        long id = longAt(((AmFrame) hold.messages.get(0)).header(), EagerHeaders.FIRST_LENGTH);
        ClosedChannelException cause = new ClosedChannelException();
        hold.promises.get(hold.promises.size() - 1).setFailure(cause); // earlier fragments carry the void promise
        hold.releaseAll(); // as the lane that failed them does
        assertSame(cause, send.cause());
        assertEquals(0, codec.zcopyWaiting());
        assertEquals(0, buf.refCnt(), "nothing holds the user's buffer");
        assertThrows(ProtocolException.class, () -> ch.writeInbound(ack(id)));
        assertFalse(ch.finish());
    }

    @Test
    void theEndpointEndingFailsWaitingZcopySendsAndAGracefulCloseCanWaitForThem() {
        EmbeddedChannel ch = tcpLike();
        ChannelFuture send = ch.writeAndFlush(new TagMessage(1, direct(content(5, 3000))));
        drain(ch).forEach(AmFrame::release);
        List<Future<?>> outstanding = new ArrayList<>();
        codec.collectOutstanding(outstanding);
        assertEquals(List.of(send), outstanding);
        ChannelFuture voidSend = ch.writeAndFlush(new TagMessage(2, direct(content(6, 3000))), ch.voidPromise());
        drain(ch).forEach(AmFrame::release);
        assertTrue(voidSend.isVoid());
        outstanding.clear();
        codec.collectOutstanding(outstanding);
        assertEquals(2, outstanding.size());
        assertTrue(outstanding.stream().noneMatch(f -> ((ChannelPromise) f).isVoid()),
                "a void promise is replaced by one a close can wait for");
        assertEquals(List.of("eager: 2 sends waiting for acknowledgement, 0 messages arriving"), describe());
        codec.endpointEnded(new ClosedChannelException());
        assertTrue(send.cause() instanceof ClosedChannelException);
        assertEquals(0, codec.zcopyWaiting());
        assertThrows(ClosedChannelException.class, ch::finish, "the void send's failure reaches the pipeline, as a "
                + "void promise's does");
    }

    private List<String> describe() {
        List<String> out = new ArrayList<>();
        codec.describeRequests(out);
        return out;
    }

    // ------------------------------------------------------------ the copy protocols' copy-in

    /** The first frame's payload of one message written on {@code lane}; whether it still reads the user's buffer. */
    private boolean payloadIsTheUsersMemory(EndpointConfig lane, ByteBuf buf) {
        EmbeddedChannel ch = channel(lane, ProtoCandidate.DISABLED);
        buf.retain();
        try {
            byte before = buf.getByte(buf.readerIndex());
            ch.writeOutbound(new TagMessage(1, buf));
            List<AmFrame> frames = drain(ch);
            try {
                boolean shared = buf.refCnt() > 1;
                buf.setByte(buf.readerIndex(), ~before);
                ByteBuf p = frames.get(0).payload();
                assertEquals(shared, p.getByte(p.readerIndex()) != before, "a slice sees the change, a copy does not");
                return shared;
            } finally {
                frames.forEach(AmFrame::release);
            }
        } finally {
            buf.release();
            assertEquals(0, worker.counters().count(EagerProtocols.SINGLE_ZCOPY.name())
                    + worker.counters().count(EagerProtocols.MULTI_ZCOPY.name()), "NUCX_ZCOPY_THRESH=inf");
            assertFalse(ch.finish());
        }
    }

    @Test
    void copyProtocolsCopyInOnlyWhereTheTransportWouldHandTheUsersMemoryOver() {
        EndpointConfig tcp = lane(true, COPY_MAX);
        assertTrue(payloadIsTheUsersMemory(tcp, direct(content(7, 2000))),
                "tcp, native, over 1 KiB: written from it; the socket has copied it when the write completes");
        assertTrue(payloadIsTheUsersMemory(tcp, direct(content(7, 10_000))), "tcp, native, multi-fragment");
        assertTrue(payloadIsTheUsersMemory(tcp, direct(content(7, COPY_MAX))), "tcp copies it next to the header");
        assertTrue(payloadIsTheUsersMemory(tcp, Unpooled.wrappedBuffer(content(7, 2000))),
                "tcp's socket channel copies heap memory as it is written");
        EndpointConfig self = lane(false, 0);
        assertFalse(payloadIsTheUsersMemory(self, Unpooled.wrappedBuffer(content(7, 100))),
                "a lane that hands frames over as they are (self above 1 KiB): copied in, heap or not");
        assertFalse(payloadIsTheUsersMemory(self, direct(content(7, 10_000))), "self, multi-fragment");
        EndpointConfig shm = lane(false, Integer.MAX_VALUE);
        assertTrue(payloadIsTheUsersMemory(shm, direct(content(7, 10_000))), "shm's ring write is the copy");
    }

    /**
     * Multi-fragment copy sends: on a lane that hands frames over as they are (self's, of over 1 KiB) every payload is
     * a copy and the user's buffer is free at once; on tcp the frames hold it (the socket copies it as it writes them)
     * until they are written, here released. Either way the fragments carry the message.
     */
    @ParameterizedTest(name = "AM_ZCOPY {0}")
    @ValueSource(booleans = {false, true})
    void copySendFragmentsCarryTheMessageAndHoldTheUsersBufferOnlyWhereTheTransportCopiesAsItWrites(boolean tcp) {
        EmbeddedChannel ch = channel(tcp ? lane(true, COPY_MAX) : lane(false, 0), ProtoCandidate.DISABLED);
        // Every fragment over 1 KiB, the last one too (a smaller one would be copied next to its header by tcp).
        byte[] bytes = content(8, (MAX_BCOPY - EagerHeaders.FIRST_LENGTH) + 2 * (MAX_BCOPY
                - EagerHeaders.MIDDLE_LENGTH) + 2000);
        ByteBuf buf = direct(bytes);
        ch.writeOutbound(new TagMessage(1, buf));
        List<AmFrame> frames = drain(ch);
        ByteBuf joined = Unpooled.buffer(bytes.length);
        try {
            assertEquals(4, frames.size());
            if (tcp) {
                assertEquals(frames.size(), buf.refCnt(), "each frame's payload is a retained slice of the user's buffer");
            } else {
                assertEquals(0, buf.refCnt(), "every payload was copied: the frames do not hold the user's buffer");
            }
            for (AmFrame f : frames) {
                joined.writeBytes(f.payload(), f.payload().readerIndex(), f.payload().readableBytes());
            }
            byte[] got = new byte[joined.readableBytes()];
            joined.getBytes(0, got);
            assertArrayEquals(bytes, got);
            assertNotEquals(0, worker.counters().count(EagerProtocols.MULTI_BCOPY.name()));
        } finally {
            joined.release();
            frames.forEach(AmFrame::release);
        }
        assertEquals(0, buf.refCnt(), "written: the user's buffer is free");
        assertFalse(ch.finish());
    }

    @Test
    void aZeroCopyMessageForAReceivePostedInAdvanceIsAcknowledgedAndLandsInItsBuffer() {
        EmbeddedChannel tx = tcpLike();
        EmbeddedChannel rx = new EmbeddedChannel();
        WorkerProtocols rxWorker = TestEndpoint.worker(rx, settings(ZCOPY_THRESH));
        rx.pipeline().addLast(new EagerCodec(new TestEndpoint(rx, lane(true, COPY_MAX)), rxWorker));
        byte[] bytes = content(9, 9000);
        ByteBuf into = Unpooled.directBuffer(9000);
        Promise<TagMessage> r = rx.eventLoop().newPromise();
        rxWorker.matcher().post(new TagReceive(0x53, -1L, into, r));
        ChannelFuture send = tx.writeAndFlush(new TagMessage(0x53, direct(bytes)));
        drain(tx).forEach(rx::writeInbound);
        assertTrue(r.isSuccess());
        r.getNow().release();
        byte[] got = new byte[9000];
        into.getBytes(0, got);
        assertArrayEquals(bytes, got);
        assertEquals(9000, into.writerIndex());
        into.release();
        tx.writeInbound((AmFrame) rx.readOutbound());
        assertTrue(send.isSuccess());
        assertFalse(tx.finish());
        assertFalse(rx.finish());
    }
}
