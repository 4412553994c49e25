package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
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
import io.nucx.protocol.ProtocolCounters;
import io.nucx.protocol.ProtocolException;
import io.nucx.protocol.ProtocolSettings;
import io.nucx.protocol.TestEndpoint;
import io.nucx.protocol.WorkerProtocols;
import io.nucx.protocol.select.PerfProfile;
import io.nucx.transport.AmFrame;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.channels.ClosedChannelException;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The send side of {@link EagerCodec} (the eager copy protocols and the synchronous ones) on an embedded endpoint
 * whose AM lane has max short 128 and max bcopy 1024, and a codec pair (one per side) for what crosses over.
 */
class EagerCodecTest {

    private static final int MAX_SHORT = 128;
    private static final int MAX_BCOPY = 1024;
    private static final int FIRST_PAYLOAD = MAX_BCOPY - EagerHeaders.FIRST_LENGTH;   // 1000
    private static final int MIDDLE_PAYLOAD = MAX_BCOPY - EagerHeaders.MIDDLE_LENGTH; // 1008
    private static final EndpointConfig LANE = TestEndpoint.amLane(MAX_SHORT, MAX_BCOPY);
    /** The same lane where copies are the transfer (shm's kind): its fragments are of even size. */
    private static final EndpointConfig COPY_LANE = new EndpointConfig(LANE.amLane(),
            LANE.amLaneAttrs().withCopyBandwidth(50e9));
    private static final ProtocolSettings EAGER = TestEndpoint.settings(1 << 20, RndvScheme.AUTO, EagerProtocols.ALL);

    private WorkerProtocols worker;
    private TestEndpoint endpoint;
    private EagerCodec codec;

    /** An endpoint channel with {@code below} between the codec and the lanes (the head). */
    private EmbeddedChannel channel(ChannelHandler... below) {
        return channel(LANE, below);
    }

    private EmbeddedChannel channel(EndpointConfig lane, ChannelHandler... below) {
        return channel(lane, EAGER, below);
    }

    private EmbeddedChannel channel(EndpointConfig lane, ProtocolSettings settings, ChannelHandler... below) {
        EmbeddedChannel ch = new EmbeddedChannel();
        worker = TestEndpoint.worker(ch, settings);
        endpoint = new TestEndpoint(ch, lane).sendTag(0xdef);
        codec = new EagerCodec(endpoint, worker);
        ch.pipeline().addLast(below);
        ch.pipeline().addLast(codec);
        return ch;
    }

    private ProtocolCounters counters() {
        return worker.counters();
    }

    private static byte[] content(long seed, int length) {
        byte[] b = new byte[length];
        new SplittableRandom(seed).nextBytes(b);
        return b;
    }

    private static List<AmFrame> drain(EmbeddedChannel ch) {
        List<AmFrame> frames = new ArrayList<>();
        for (Object o; (o = ch.readOutbound()) != null; ) {
            frames.add((AmFrame) o);
        }
        return frames;
    }

    private static void release(List<AmFrame> frames) {
        frames.forEach(AmFrame::release);
    }

    private static long longAt(ByteBuf header, int offset) {
        return header.getLongLE(header.readerIndex() + offset);
    }

    /**
     * Checks headers, sizes and offsets of the frames of one message and that their payloads make it up; returns the
     * message id of a multi-fragment message (-1 for one frame).
     */
    private static long assertFrames(List<AmFrame> frames, long tag, byte[] content) {
        return assertFrames(frames, tag, content, false);
    }

    /** As {@link #assertFrames(List, long, byte[])}; {@code even}: a copy lane's fragments, of even size. */
    private static long assertFrames(List<AmFrame> frames, long tag, byte[] content, boolean even) {
        ByteBuf joined = Unpooled.buffer(content.length);
        long msgId = -1;
        try {
            if (content.length <= MAX_BCOPY - EagerHeaders.ONLY_LENGTH) {
                assertEquals(1, frames.size());
                AmFrame f = frames.get(0);
                assertEquals(AmIds.EAGER_ONLY, f.amId());
                assertEquals(EagerHeaders.ONLY_LENGTH, f.header().readableBytes());
                assertEquals(tag, longAt(f.header(), EagerHeaders.TAG_OFFSET));
                assertTrue(f.length() <= (content.length <= MAX_SHORT - EagerHeaders.ONLY_LENGTH ? MAX_SHORT
                        : MAX_BCOPY));
                joined.writeBytes(f.payload(), f.payload().readerIndex(), f.payload().readableBytes());
            } else {
                int expectedFrames = 1 + (content.length - FIRST_PAYLOAD + MIDDLE_PAYLOAD - 1) / MIDDLE_PAYLOAD;
                assertEquals(expectedFrames, frames.size(), "frame count");
                AmFrame first = frames.get(0);
                ByteBuf h = first.header();
                assertEquals(AmIds.EAGER_FIRST, first.amId());
                assertEquals(EagerHeaders.FIRST_LENGTH, h.readableBytes());
                assertEquals(tag, longAt(h, EagerHeaders.TAG_OFFSET));
                assertEquals(content.length, longAt(h, EagerHeaders.FIRST_TOTAL_OFFSET));
                msgId = longAt(h, EagerHeaders.FIRST_MSG_ID_OFFSET);
                // As few fragments as the frame size allows, of even size (so the receiver copies one out while the
                // next goes in, instead of a full fragment and a sliver): the middle ones but the last of one size,
                // the last short of it by less than the fragment count, the first no larger and smaller only by what
                // its larger header takes and the rounding
                // (On other lanes: the largest frames, the last holding the rest.)
                int firstSize = first.payload().readableBytes();
                int evenSize = !even ? MIDDLE_PAYLOAD : frames.size() > 2 ? frames.get(1).payload().readableBytes()
                        : content.length - firstSize;
                if (even) {
                    assertTrue(firstSize <= FIRST_PAYLOAD, "first fragment within its frame");
                    assertTrue(firstSize <= evenSize + frames.size()
                            && firstSize >= evenSize - (MIDDLE_PAYLOAD - FIRST_PAYLOAD) - frames.size(),
                            "first fragment " + firstSize + " against " + evenSize);
                } else {
                    assertEquals(FIRST_PAYLOAD, firstSize);
                }
                assertTrue(first.length() <= MAX_BCOPY);
                joined.writeBytes(first.payload(), first.payload().readerIndex(), first.payload().readableBytes());
                for (int i = 1; i < frames.size(); i++) {
                    AmFrame m = frames.get(i);
                    h = m.header();
                    assertEquals(AmIds.EAGER_MIDDLE, m.amId());
                    assertEquals(EagerHeaders.MIDDLE_LENGTH, h.readableBytes());
                    assertEquals(msgId, longAt(h, EagerHeaders.MIDDLE_MSG_ID_OFFSET));
                    assertEquals(joined.readableBytes(), longAt(h, EagerHeaders.MIDDLE_OFFSET_OFFSET),
                            "offset of fragment " + i);
                    int size = m.payload().readableBytes();
                    assertTrue(m.length() <= MAX_BCOPY);
                    if (i < frames.size() - 1) {
                        assertEquals(evenSize, size, "size of fragment " + i);
                    } else {
                        assertEquals(content.length - joined.readableBytes(), size, "the last fragment ends it");
                        assertTrue(size <= evenSize && (!even || evenSize - size < frames.size()), "the last "
                                + "fragment's size " + size + " against " + evenSize + " for the others");
                    }
                    assertTrue(m.length() <= MAX_BCOPY);
                    joined.writeBytes(m.payload(), m.payload().readerIndex(), m.payload().readableBytes());
                }
            }
            assertTrue(ByteBufUtil.equals(Unpooled.wrappedBuffer(content), joined), "fragments make up the content");
        } finally {
            joined.release();
        }
        return msgId;
    }

    @ParameterizedTest(name = "{0} bytes -> {1}")
    @CsvSource({
            "0, egr/short",
            "100, egr/short",
            "120, egr/short",
            "121, egr/single/bcopy",
            "500, egr/single/bcopy",
            "1016, egr/single/bcopy",
            "1017, egr/multi/bcopy",
            "5000, egr/multi/bcopy",
            "3016, egr/multi/bcopy"})
    void messageSizeChoosesTheProtocolAndTheFrames(int size, String protocol) {
        EmbeddedChannel ch = channel();
        byte[] bytes = content(size, size);
        long tag = 0x1234_5678_9abc_def0L;
        ByteBuf buf = Unpooled.wrappedBuffer(bytes.clone());
        assertTrue(ch.writeOutbound(new TagMessage(tag, buf)));
        List<AmFrame> frames = drain(ch);
        try {
            assertFrames(frames, tag, bytes);
        } finally {
            release(frames);
        }
        if (size > 0) { // an empty wrapped array is the shared, unreleasable empty buffer
            assertEquals(0, buf.refCnt(), "the message is released once its frames are");
        }
        assertEquals(1, counters().count(protocol), protocol);
        assertEquals(1, counters().snapshot().values().stream().mapToLong(Long::longValue).sum(),
                "exactly one protocol counted: " + counters().snapshot());
        assertFalse(ch.finish());
    }

    @ParameterizedTest(name = "{0} bytes")
    @ValueSource(ints = {1017, 2000, 2016, 3016, 5000})
    void onACopyLaneAMessageGoesInFragmentsOfEvenSize(int size) {
        EmbeddedChannel ch = channel(COPY_LANE);
        assertSentInEvenFragments(ch, size);
        assertEquals(1, counters().count(EagerProtocols.MULTI_BCOPY.name()));
        assertFalse(ch.finish());
    }

    /** Sends a {@code size}-byte message on {@code ch} and checks its frames, of even size. */
    private static void assertSentInEvenFragments(EmbeddedChannel ch, int size) {
        byte[] bytes = content(size, size);
        assertTrue(ch.writeOutbound(new TagMessage(7, Unpooled.wrappedBuffer(bytes.clone()))));
        List<AmFrame> frames = drain(ch);
        try {
            assertFrames(frames, 7, bytes, true);
        } finally {
            release(frames);
        }
    }

    /**
     * A performance profile that fitted the lane's bandwidth takes its copy rate away from the model (the tables), not
     * from the transport: the ring is still a ring, and the fragments stay even.
     */
    @Test
    void aProfileThatFittedTheLanesBandwidthLeavesItsFragmentsEven() {
        PerfProfile profile = PerfProfile.builder("test").copyBandwidth(20e9)
                .figure(COPY_LANE.amLane(), PerfProfile.Figure.BANDWIDTH, 15e9).build();
        assertTrue(!profile.apply(COPY_LANE).amLaneAttrs().copiesAreTheTransfer(), "the model's lane has no copy rate");
        ProtocolSettings settings = new ProtocolSettings(EAGER.maxMessageSize(), EAGER.bcopyThresh(),
                EAGER.zcopyThresh(), EAGER.rndvThresh(), false, EAGER.scheme(), EAGER.protocols(), profile);
        EmbeddedChannel ch = channel(COPY_LANE, settings);
        assertSentInEvenFragments(ch, 2016);
        assertFalse(ch.finish());
    }

    @Test
    void countersAccumulatePerProtocolAndEachMultiFragmentMessageTakesTheNextMessageId() {
        EmbeddedChannel ch = channel();
        int[] sizes = {0, 100, 500, 5000, 5000, 120};
        for (int i = 0; i < sizes.length; i++) {
            ch.writeOutbound(new TagMessage(i, Unpooled.wrappedBuffer(new byte[sizes[i]])));
        }
        List<AmFrame> frames = drain(ch);
        List<Long> msgIds = new ArrayList<>();
        for (AmFrame f : frames) {
            if (f.amId() == AmIds.EAGER_FIRST) {
                msgIds.add(longAt(f.header(), EagerHeaders.FIRST_MSG_ID_OFFSET));
            }
        }
        release(frames);
        assertEquals(3, counters().count(EagerProtocols.SHORT.name()));
        assertEquals(1, counters().count(EagerProtocols.SINGLE_BCOPY.name()));
        assertEquals(2, counters().count(EagerProtocols.MULTI_BCOPY.name()));
        assertEquals(2, msgIds.size());
        assertEquals(msgIds.get(0) + 1, msgIds.get(1), "one message id per multi-fragment message");
        assertEquals(msgIds.get(1) + 1, worker.nextMessageId(), "from the worker's sequence");
        assertFalse(ch.finish());
    }

    @Test
    void fragmentsAreSlicesOfTheMessageNotCopiesWhereTheTransportCopiesThem() {
        EmbeddedChannel ch = channel();
        ByteBuf buf = Unpooled.wrappedBuffer(content(7, 3000));
        ch.writeOutbound(new TagMessage(7, buf));
        List<AmFrame> frames = drain(ch);
        try {
            assertTrue(buf.refCnt() > 0, "the frames keep the message's buffer");
            assertSame(buf, frames.get(1).payload().unwrap(), "a fragment is a slice of the message buffer");
        } finally {
            release(frames);
        }
        assertEquals(0, buf.refCnt());
        assertFalse(ch.finish());
    }

    @Test
    void sendPromiseCompletesWhenTheLastFragmentIsWritten() {
        HoldWrites hold = new HoldWrites();
        EmbeddedChannel ch = channel(hold);
        ChannelFuture send = ch.writeAndFlush(new TagMessage(1, Unpooled.wrappedBuffer(new byte[5000])));
        try {
            assertEquals(5, hold.promises.size());
            for (int i = 0; i < 4; i++) {
                assertTrue(hold.promises.get(i).isVoid(), "fragment " + i + " carries no promise of its own");
                assertFalse(send.isDone());
            }
            assertFalse(hold.promises.get(4).isVoid());
            hold.promises.get(4).setSuccess();
            assertTrue(send.isSuccess());
        } finally {
            hold.releaseAll();
        }
        assertFalse(ch.finish());
    }

    @Test
    void sendPromiseFailsWhenTheLastFragmentFails() {
        HoldWrites hold = new HoldWrites();
        EmbeddedChannel ch = channel(hold);
        ChannelFuture send = ch.writeAndFlush(new TagMessage(1, Unpooled.wrappedBuffer(new byte[5000])));
        ClosedChannelException cause = new ClosedChannelException();
        hold.promises.get(hold.promises.size() - 1).setFailure(cause);
        assertSame(cause, send.cause());
        hold.releaseAll();
        assertFalse(ch.finish());
    }

    @Test
    void onEmbeddedChannelEveryWriteCompletesOnFlush() {
        EmbeddedChannel ch = channel();
        ChannelFuture small = ch.write(new TagMessage(1, Unpooled.wrappedBuffer(new byte[10])));
        ChannelFuture large = ch.write(new TagMessage(2, Unpooled.wrappedBuffer(new byte[5000])));
        assertFalse(small.isDone());
        assertFalse(large.isDone());
        ch.flush();
        assertTrue(small.isSuccess());
        assertTrue(large.isSuccess());
        release(drain(ch));
        assertFalse(ch.finish());
    }

    @Test
    void plainByteBufIsSentWithTheEndpointsSendTagReadAtEachWrite() {
        EmbeddedChannel ch = channel();
        ch.writeOutbound(Unpooled.wrappedBuffer(new byte[] {1, 2, 3}));
        endpoint.sendTag(0xbeef);
        ch.writeOutbound(Unpooled.wrappedBuffer(new byte[2000]));
        List<AmFrame> frames = drain(ch);
        try {
            assertEquals(AmIds.EAGER_ONLY, frames.get(0).amId());
            assertEquals(0xdef, longAt(frames.get(0).header(), EagerHeaders.TAG_OFFSET));
            assertEquals(AmIds.EAGER_FIRST, frames.get(1).amId());
            assertEquals(0xbeef, longAt(frames.get(1).header(), EagerHeaders.TAG_OFFSET));
        } finally {
            release(frames);
        }
        assertFalse(ch.finish());
    }

    @Test
    void otherMessagesPassThroughBothWays() {
        EmbeddedChannel ch = channel();
        ch.writeOutbound("not a message");
        assertEquals("not a message", ch.readOutbound());
        AmFrame wireup = AmFrame.of(AmIds.WIREUP, Unpooled.buffer(8).writeLongLE(1));
        AmFrame rts = AmFrame.of(AmIds.RNDV_RTS, Unpooled.buffer(24).writeZero(24));
        ch.writeInbound(wireup, rts, "not a frame");
        assertSame(wireup, ch.readInbound(), "frames of ids the family did not register go on, untouched");
        assertSame(rts, ch.readInbound());
        assertEquals("not a frame", ch.readInbound());
        assertEquals(1, wireup.refCnt());
        wireup.release();
        rts.release();
        assertFalse(ch.finish());
    }

    @Test
    void messageReadFromAnOffsetIsSentFromThatOffset() {
        EmbeddedChannel ch = channel();
        byte[] bytes = content(3, 3000);
        ByteBuf buf = Unpooled.buffer(3100).writeZero(100).writeBytes(bytes);
        buf.skipBytes(100);
        ch.writeOutbound(new TagMessage(3, buf));
        List<AmFrame> frames = drain(ch);
        try {
            assertFrames(frames, 3, bytes);
        } finally {
            release(frames);
        }
        assertFalse(ch.finish());
    }

    @Test
    void laneTooSmallForTheFirstHeaderIsRejected() {
        EmbeddedChannel ch = new EmbeddedChannel();
        EndpointConfig tiny = TestEndpoint.amLane(16, EagerHeaders.FIRST_LENGTH);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new EagerCodec(new TestEndpoint(ch, tiny), TestEndpoint.worker(ch, EAGER)));
        assertTrue(e.getMessage().contains("max bcopy 24 leaves no room for eager payload"), e.getMessage());
        assertFalse(ch.finish());
    }

    @Test
    void framesReassembleThroughAReceivingCodecIntoTheOriginalMessages() {
        EmbeddedChannel tx = channel();
        EmbeddedChannel rx = new EmbeddedChannel();
        WorkerProtocols rxWorker = TestEndpoint.worker(rx, EAGER);
        rx.pipeline().addLast(new EagerCodec(new TestEndpoint(rx, LANE), rxWorker));
        int[] sizes = {0, 1, 100, 120, 121, 500, 1016, 1017, 5000, 65_536};
        List<Promise<TagMessage>> receives = new ArrayList<>();
        for (int i = 0; i < sizes.length; i++) {
            if (i % 2 == 0) { // half posted before the frames arrive, half after
                Promise<TagMessage> p = rx.eventLoop().newPromise();
                rxWorker.matcher().post(new TagReceive(i, -1L, null, p));
                receives.add(p);
            } else {
                receives.add(null);
            }
            tx.writeOutbound(new TagMessage(i, Unpooled.wrappedBuffer(content(i, sizes[i]))));
        }
        for (AmFrame f : drain(tx)) {
            rx.writeInbound(f);
        }
        assertEquals(List.of("eager: 0 sends waiting for acknowledgement, 0 messages arriving"), describe(rx));
        for (int i = 0; i < sizes.length; i++) {
            Promise<TagMessage> p = receives.get(i);
            if (p == null) {
                p = rx.eventLoop().newPromise();
                rxWorker.matcher().post(new TagReceive(i, -1L, null, p));
            }
            assertTrue(p.isSuccess(), "message " + i + ": " + p.cause());
            TagMessage m = p.getNow();
            try {
                assertEquals(i, m.tag());
                assertTrue(ByteBufUtil.equals(Unpooled.wrappedBuffer(content(i, sizes[i])), m.content()),
                        "content of the " + sizes[i] + "-byte message");
            } finally {
                m.release();
            }
        }
        assertEquals(0, rxWorker.matcher().unexpectedCount());
        assertNull(rx.readOutbound(), "no acknowledgement of copy sends");
        assertFalse(tx.finish());
        assertFalse(rx.finish());
    }

    private static List<String> describe(EmbeddedChannel ch) {
        List<String> out = new ArrayList<>();
        ch.pipeline().get(EagerCodec.class).describeRequests(out);
        return out;
    }

    /**
     * A send cannot be taken back once written: Netty drops a write whose promise is cancelled, which would lose the
     * fragment the promise rides on and leave the message half sent. A send cancelled before it is written sends
     * nothing.
     */
    @Test
    void aSendCannotBeCancelledOnceWrittenAndACancelledOneSendsNothing() {
        EmbeddedChannel ch = channel();
        ChannelPromise sent = ch.newPromise();
        ch.writeAndFlush(new TagMessage(1, Unpooled.wrappedBuffer(content(1, 5000))), sent);
        assertFalse(sent.cancel(false), "written: not cancellable");
        List<AmFrame> frames = drain(ch);
        assertEquals(5, frames.size(), "FIRST + 4 MIDDLE, all of them");
        release(frames);
        ChannelPromise cancelled = ch.newPromise();
        assertTrue(cancelled.cancel(false));
        ByteBuf data = Unpooled.wrappedBuffer(content(2, 5000));
        ch.writeAndFlush(new TagMessage(2, data), cancelled);
        assertEquals(0, drain(ch).size(), "cancelled before it was sent: nothing goes out");
        assertEquals(0, data.refCnt(), "and its buffer is released");
        assertFalse(ch.finishAndReleaseAll());
    }

    // ------------------------------------------------------------ synchronous sends (egrsnc)

    private static AmFrame syncAck(long id, int status) {
        return AmFrame.of(AmIds.EAGER_SYNC_ACK, Unpooled.buffer(9).writeLongLE(id).writeByte(status));
    }

    @Test
    void aSynchronousSendCompletesWhenTheReceiverMatchesItNotWhenItArrives() {
        EmbeddedChannel tx = channel();
        EmbeddedChannel rx = new EmbeddedChannel();
        WorkerProtocols rxWorker = TestEndpoint.worker(rx, EAGER);
        rx.pipeline().addLast(new EagerCodec(new TestEndpoint(rx, LANE), rxWorker));
        byte[] small = content(1, 100);
        byte[] large = content(2, 5000);
        ChannelFuture one = tx.writeAndFlush(new TagMessage(0x31, Unpooled.wrappedBuffer(small), true));
        ChannelFuture multi = tx.writeAndFlush(new TagMessage(0x32, Unpooled.wrappedBuffer(large), true));
        List<AmFrame> frames = drain(tx);
        AmFrame only = frames.get(0);
        assertEquals(AmIds.EAGER_SYNC_ONLY, only.amId());
        assertEquals(EagerHeaders.SYNC_ONLY_LENGTH, only.header().readableBytes());
        assertEquals(0x31, longAt(only.header(), EagerHeaders.TAG_OFFSET));
        long id1 = longAt(only.header(), EagerHeaders.ONLY_LENGTH);
        AmFrame first = frames.get(1);
        assertEquals(AmIds.EAGER_SYNC_FIRST, first.amId());
        assertEquals(EagerHeaders.SYNC_FIRST_LENGTH, first.header().readableBytes());
        assertEquals(5000, longAt(first.header(), EagerHeaders.FIRST_TOTAL_OFFSET));
        long id2 = longAt(first.header(), EagerHeaders.FIRST_LENGTH);
        assertEquals(MAX_BCOPY - EagerHeaders.SYNC_FIRST_LENGTH, first.payload().readableBytes(),
                "the request id takes room from the first fragment's payload");
        assertEquals(AmIds.EAGER_MIDDLE, frames.get(frames.size() - 1).amId());
        assertEquals(1, counters().count(EagerProtocols.SYNC_SINGLE_BCOPY.name()));
        assertEquals(1, counters().count(EagerProtocols.SYNC_MULTI_BCOPY.name()));
        assertFalse(one.isDone(), "written, not matched");
        assertFalse(multi.isDone());
        assertEquals(2, codec.syncWaiting());
        List<Future<?>> outstanding = new ArrayList<>();
        codec.collectOutstanding(outstanding);
        assertEquals(List.of(one, multi), outstanding, "a graceful close waits for them");

        frames.forEach(rx::writeInbound);
        assertNull(rx.readOutbound(), "arrived, but no receive matched yet: no acknowledgement");
        Promise<TagMessage> r2 = rx.eventLoop().newPromise();
        rxWorker.matcher().post(new TagReceive(0x32, -1L, null, r2));
        Promise<TagMessage> r1 = rx.eventLoop().newPromise();
        rxWorker.matcher().post(new TagReceive(0x31, -1L, null, r1));
        AmFrame ack2 = rx.readOutbound();
        AmFrame ack1 = rx.readOutbound();
        assertEquals(AmIds.EAGER_SYNC_ACK, ack2.amId());
        assertEquals(EagerHeaders.SYNC_ACK_LENGTH, ack2.header().readableBytes());
        assertEquals(id2, longAt(ack2.header(), 0));
        assertEquals(RndvHeaders.STATUS_OK, ack2.header().getByte(8));
        assertEquals(id1, longAt(ack1.header(), 0));
        tx.writeInbound(ack2);
        assertTrue(multi.isSuccess());
        assertFalse(one.isDone());
        tx.writeInbound(ack1);
        assertTrue(one.isSuccess());
        assertEquals(0, codec.syncWaiting());
        TagMessage m1 = r1.getNow();
        TagMessage m2 = r2.getNow();
        assertTrue(ByteBufUtil.equals(Unpooled.wrappedBuffer(small), m1.content()));
        assertTrue(ByteBufUtil.equals(Unpooled.wrappedBuffer(large), m2.content()));
        m1.release();
        m2.release();
        assertFalse(tx.finish());
        assertFalse(rx.finish());
    }

    @Test
    void aSynchronousMessageTooLongForItsReceiveFailsBothSidesWithTruncation() {
        EmbeddedChannel tx = channel();
        EmbeddedChannel rx = new EmbeddedChannel();
        WorkerProtocols rxWorker = TestEndpoint.worker(rx, EAGER);
        rx.pipeline().addLast(new EagerCodec(new TestEndpoint(rx, LANE), rxWorker));
        ByteBuf into = Unpooled.buffer(50, 50);
        Promise<TagMessage> r = rx.eventLoop().newPromise();
        rxWorker.matcher().post(new TagReceive(0x33, -1L, into, r));
        ChannelFuture send = tx.writeAndFlush(new TagMessage(0x33, Unpooled.wrappedBuffer(content(3, 100)), true));
        drain(tx).forEach(rx::writeInbound);
        assertInstanceOf(MessageTruncatedException.class, r.cause());
        AmFrame ack = rx.readOutbound();
        assertEquals(RndvHeaders.STATUS_TRUNCATED, ack.header().getByte(8));
        tx.writeInbound(ack);
        MessageTruncatedException e = assertInstanceOf(MessageTruncatedException.class, send.cause());
        assertEquals(0x33, e.tag());
        assertEquals(100, e.length());
        assertEquals(0, into.writerIndex());
        into.release();
        assertFalse(tx.finish());
        assertFalse(rx.finish());
    }

    @Test
    void aSynchronousMessageForThePipelineIsAcknowledgedOnArrival() {
        EmbeddedChannel rx = new EmbeddedChannel();
        WorkerProtocols rxWorker = TestEndpoint.worker(rx, EAGER);
        rx.pipeline().addLast(new EagerCodec(new TestEndpoint(rx, LANE).toPipeline(t -> t == 7), rxWorker),
                new TagOrder());
        rx.writeInbound(AmFrame.of(AmIds.EAGER_SYNC_ONLY, 0, Unpooled.buffer(16).writeLongLE(7).writeLongLE(41),
                Unpooled.wrappedBuffer(new byte[] {1, 2})));
        AmFrame ack = rx.readOutbound();
        assertEquals(41, longAt(ack.header(), 0));
        assertEquals(RndvHeaders.STATUS_OK, ack.header().getByte(8));
        ack.release();
        TagMessage m = rx.readInbound();
        assertEquals(7, m.tag());
        assertEquals(2, m.content().readableBytes());
        m.release();
        assertFalse(rx.finish());
    }

    @Test
    void badSynchronousAcknowledgementsAreProtocolErrorsNamingTheValue() {
        EmbeddedChannel ch = channel();
        ChannelFuture send = ch.writeAndFlush(new TagMessage(1, Unpooled.wrappedBuffer(new byte[10]), true));
        List<AmFrame> frames = drain(ch);
        long id = longAt(frames.get(0).header(), EagerHeaders.ONLY_LENGTH);
        release(frames);
        ProtocolException e = assertThrows(ProtocolException.class, () -> ch.writeInbound(syncAck(id + 1, 0)));
        assertTrue(e.getMessage().contains("EAGER_SYNC_ACK for unknown synchronous send " + (id + 1)), e.getMessage());
        AmFrame shortAck = AmFrame.of(AmIds.EAGER_SYNC_ACK, Unpooled.buffer(8).writeLongLE(id));
        e = assertThrows(ProtocolException.class, () -> ch.writeInbound(shortAck));
        assertTrue(e.getMessage().contains("EAGER_SYNC_ACK header is 8 bytes, expected 9"), e.getMessage());
        assertEquals(0, shortAck.refCnt());
        assertFalse(send.isDone(), "a bad acknowledgement completes nothing");
        ch.writeInbound(syncAck(id, 5)); // a status we do not know fails that send only, not the lane
        assertInstanceOf(ProtocolException.class, send.cause());
        assertTrue(send.cause().getMessage().contains("synchronous send " + id + " ended with status 5"),
                send.cause().getMessage());
        assertFalse(ch.finish());
    }

    @Test
    void aSynchronousSendWhoseWriteFailsOrWhoseEndpointEndsFails() {
        HoldWrites hold = new HoldWrites();
        EmbeddedChannel ch = channel(hold);
        ChannelFuture failed = ch.writeAndFlush(new TagMessage(1, Unpooled.wrappedBuffer(new byte[10]), true));
        ChannelFuture waiting = ch.writeAndFlush(new TagMessage(2, Unpooled.wrappedBuffer(new byte[10]), true));
        ClosedChannelException cause = new ClosedChannelException();
        hold.promises.get(0).setFailure(cause);
        assertSame(cause, failed.cause(), "failed at once: the data never left");
        hold.promises.get(1).setSuccess();
        assertFalse(waiting.isDone());
        assertEquals(1, codec.syncWaiting());
        IllegalStateException end = new IllegalStateException("endpoint ended");
        codec.endpointEnded(end);
        assertSame(end, waiting.cause());
        assertEquals(0, codec.syncWaiting());
        assertFalse(codec.lingers());
        hold.releaseAll();
        assertFalse(ch.finish());
    }
}
