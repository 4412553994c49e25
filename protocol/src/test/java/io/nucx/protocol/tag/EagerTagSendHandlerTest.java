package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.util.concurrent.Promise;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.EndpointConfig;
import io.nucx.protocol.ProtocolCounters;
import io.nucx.transport.AmFrame;
import io.nucx.transport.Capability;
import io.nucx.transport.IfaceAttributes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.channels.ClosedChannelException;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The eager send protocols on an embedded channel whose AM lane has max short 128 and max bcopy 1024. */
class EagerTagSendHandlerTest {

    private static final int MAX_SHORT = 128;
    private static final int MAX_BCOPY = 1024;
    private static final int FIRST_PAYLOAD = MAX_BCOPY - EagerHeaders.FIRST_LENGTH;   // 1000
    private static final int MIDDLE_PAYLOAD = MAX_BCOPY - EagerHeaders.MIDDLE_LENGTH; // 1008

    private final ProtocolCounters counters = new ProtocolCounters();
    private final AtomicLong messageIds = new AtomicLong(0x500);
    private final AtomicLong defaultTag = new AtomicLong(0xdef);

    private static EndpointConfig config(int maxShort, int maxBcopy) {
        return new EndpointConfig("test/lo", new IfaceAttributes(EnumSet.of(Capability.AM_SHORT, Capability.AM_BCOPY),
                maxShort, maxBcopy, 64, 1e-6, 0, 1e9, 0, 1e-7, 0));
    }

    private EagerTagSendHandler handler() {
        return new EagerTagSendHandler(config(MAX_SHORT, MAX_BCOPY), messageIds::getAndIncrement, defaultTag::get,
                counters);
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

    /** Checks headers, sizes and offsets of the frames of one message and that their payloads make it up. */
    private static void assertFrames(List<AmFrame> frames, long tag, byte[] content, long msgId) {
        ByteBuf joined = Unpooled.buffer(content.length);
        try {
            if (content.length <= MAX_BCOPY - EagerHeaders.ONLY_LENGTH) {
                assertEquals(1, frames.size());
                AmFrame f = frames.get(0);
                assertEquals(AmIds.EAGER_ONLY, f.amId());
                assertEquals(EagerHeaders.ONLY_LENGTH, f.header().readableBytes());
                assertEquals(tag, f.header().getLongLE(f.header().readerIndex() + EagerHeaders.TAG_OFFSET));
                joined.writeBytes(f.payload(), f.payload().readerIndex(), f.payload().readableBytes());
            } else {
                int expectedFrames = 1 + (content.length - FIRST_PAYLOAD + MIDDLE_PAYLOAD - 1) / MIDDLE_PAYLOAD;
                assertEquals(expectedFrames, frames.size(), "frame count");
                AmFrame first = frames.get(0);
                ByteBuf h = first.header();
                int at = h.readerIndex();
                assertEquals(AmIds.EAGER_FIRST, first.amId());
                assertEquals(EagerHeaders.FIRST_LENGTH, h.readableBytes());
                assertEquals(tag, h.getLongLE(at + EagerHeaders.TAG_OFFSET));
                assertEquals(content.length, h.getLongLE(at + EagerHeaders.FIRST_TOTAL_OFFSET));
                assertEquals(msgId, h.getLongLE(at + EagerHeaders.FIRST_MSG_ID_OFFSET));
                assertEquals(FIRST_PAYLOAD, first.payload().readableBytes());
                assertTrue(first.length() <= MAX_BCOPY);
                joined.writeBytes(first.payload(), first.payload().readerIndex(), first.payload().readableBytes());
                for (int i = 1; i < frames.size(); i++) {
                    AmFrame m = frames.get(i);
                    h = m.header();
                    at = h.readerIndex();
                    assertEquals(AmIds.EAGER_MIDDLE, m.amId());
                    assertEquals(EagerHeaders.MIDDLE_LENGTH, h.readableBytes());
                    assertEquals(msgId, h.getLongLE(at + EagerHeaders.MIDDLE_MSG_ID_OFFSET));
                    assertEquals(joined.readableBytes(), h.getLongLE(at + EagerHeaders.MIDDLE_OFFSET_OFFSET),
                            "offset of fragment " + i);
                    int expectedSize = Math.min(MIDDLE_PAYLOAD, content.length - joined.readableBytes());
                    assertEquals(expectedSize, m.payload().readableBytes(), "size of fragment " + i);
                    assertTrue(m.length() <= MAX_BCOPY);
                    joined.writeBytes(m.payload(), m.payload().readerIndex(), m.payload().readableBytes());
                }
            }
            assertTrue(ByteBufUtil.equals(Unpooled.wrappedBuffer(content), joined), "fragments make up the content");
        } finally {
            joined.release();
        }
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
        EmbeddedChannel ch = new EmbeddedChannel(handler());
        byte[] bytes = content(size, size);
        long tag = 0x1234_5678_9abc_def0L;
        ByteBuf buf = Unpooled.wrappedBuffer(bytes.clone());
        assertTrue(ch.writeOutbound(new TagMessage(tag, buf)));
        List<AmFrame> frames = drain(ch);
        try {
            assertFrames(frames, tag, bytes, 0x500);
        } finally {
            release(frames);
        }
        if (size > 0) { // an empty wrapped array is the shared, unreleasable empty buffer
            assertEquals(0, buf.refCnt(), "the message is released once its frames are");
        }
        assertEquals(1, counters.count(protocol), protocol);
        assertEquals(1, counters.snapshot().values().stream().mapToLong(Long::longValue).sum(),
                "exactly one protocol counted: " + counters.snapshot());
        assertFalse(ch.finish());
    }

    @Test
    void countersAccumulatePerProtocol() {
        EmbeddedChannel ch = new EmbeddedChannel(handler());
        int[] sizes = {0, 100, 500, 5000, 5000, 120};
        for (int i = 0; i < sizes.length; i++) {
            ch.writeOutbound(new TagMessage(i, Unpooled.wrappedBuffer(new byte[sizes[i]])));
        }
        release(drain(ch));
        assertEquals(3, counters.count(EagerTagSendHandler.EGR_SHORT));
        assertEquals(1, counters.count(EagerTagSendHandler.EGR_SINGLE_BCOPY));
        assertEquals(2, counters.count(EagerTagSendHandler.EGR_MULTI_BCOPY));
        assertEquals(0x502, messageIds.get(), "one message id per multi-fragment message");
        assertFalse(ch.finish());
    }

    @Test
    void fragmentsAreSlicesOfTheMessageNotCopies() {
        EmbeddedChannel ch = new EmbeddedChannel(handler());
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

    /** Holds every write with its promise instead of passing it on, so the test decides when each completes. */
    private static final class HoldWrites extends ChannelOutboundHandlerAdapter {
        final List<Object> messages = new ArrayList<>();
        final List<ChannelPromise> promises = new ArrayList<>();

        @Override
        public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
            messages.add(msg);
            promises.add(promise);
        }

        void releaseAll() {
            messages.forEach(io.netty.util.ReferenceCountUtil::release);
        }
    }

    @Test
    void sendPromiseCompletesWhenTheLastFragmentIsWritten() {
        HoldWrites hold = new HoldWrites();
        EmbeddedChannel ch = new EmbeddedChannel(hold, handler());
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
        EmbeddedChannel ch = new EmbeddedChannel(hold, handler());
        ChannelFuture send = ch.writeAndFlush(new TagMessage(1, Unpooled.wrappedBuffer(new byte[5000])));
        ClosedChannelException cause = new ClosedChannelException();
        hold.promises.get(hold.promises.size() - 1).setFailure(cause);
        assertSame(cause, send.cause());
        hold.releaseAll();
        assertFalse(ch.finish());
    }

    @Test
    void onEmbeddedChannelEveryWriteCompletesOnFlush() {
        EmbeddedChannel ch = new EmbeddedChannel(handler());
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
    void plainByteBufIsSentWithTheDefaultTagReadAtEachWrite() {
        EmbeddedChannel ch = new EmbeddedChannel(handler());
        ch.writeOutbound(Unpooled.wrappedBuffer(new byte[] {1, 2, 3}));
        defaultTag.set(0xbeef);
        ch.writeOutbound(Unpooled.wrappedBuffer(new byte[2000]));
        List<AmFrame> frames = drain(ch);
        try {
            assertEquals(AmIds.EAGER_ONLY, frames.get(0).amId());
            assertEquals(0xdef, frames.get(0).header().getLongLE(EagerHeaders.TAG_OFFSET));
            assertEquals(AmIds.EAGER_FIRST, frames.get(1).amId());
            assertEquals(0xbeef, frames.get(1).header().getLongLE(EagerHeaders.TAG_OFFSET));
        } finally {
            release(frames);
        }
        assertFalse(ch.finish());
    }

    @Test
    void otherMessagesPassThrough() {
        EmbeddedChannel ch = new EmbeddedChannel(handler());
        ch.writeOutbound("not a message");
        assertEquals("not a message", ch.readOutbound());
        assertFalse(ch.finish());
    }

    @Test
    void messageReadFromAnOffsetIsSentFromThatOffset() {
        EmbeddedChannel ch = new EmbeddedChannel(handler());
        byte[] bytes = content(3, 3000);
        ByteBuf buf = Unpooled.buffer(3100).writeZero(100).writeBytes(bytes);
        buf.skipBytes(100);
        ch.writeOutbound(new TagMessage(3, buf));
        List<AmFrame> frames = drain(ch);
        try {
            assertFrames(frames, 3, bytes, 0x500);
        } finally {
            release(frames);
        }
        assertFalse(ch.finish());
    }

    @Test
    void laneTooSmallForTheFirstHeaderIsRejected() {
        assertThrows(IllegalArgumentException.class, () -> new EagerTagSendHandler(config(16, EagerHeaders.FIRST_LENGTH),
                messageIds::get, defaultTag::get, counters));
    }

    @Test
    void framesReassembleThroughTheReceiverIntoTheOriginalMessages() {
        EmbeddedChannel tx = new EmbeddedChannel(handler());
        EmbeddedChannel rx = new EmbeddedChannel();
        TagMatcher matcher = new TagMatcher(rx.eventLoop(), ByteBufAllocator.DEFAULT, 1 << 20, (c, t) -> false);
        EagerTagReceiver receiver = new EagerTagReceiver(matcher);
        int[] sizes = {0, 1, 100, 120, 121, 500, 1016, 1017, 5000, 65_536};
        List<Promise<TagMessage>> receives = new ArrayList<>();
        for (int i = 0; i < sizes.length; i++) {
            if (i % 2 == 0) { // half posted before the frames arrive, half after
                Promise<TagMessage> p = rx.eventLoop().newPromise();
                matcher.post(i, -1L, null, p);
                receives.add(p);
            } else {
                receives.add(null);
            }
            tx.writeOutbound(new TagMessage(i, Unpooled.wrappedBuffer(content(i, sizes[i]))));
        }
        for (AmFrame f : drain(tx)) {
            receiver.onFrame(rx, f);
        }
        assertEquals(0, matcher.reassemblyCount());
        for (int i = 0; i < sizes.length; i++) {
            Promise<TagMessage> p = receives.get(i);
            if (p == null) {
                p = rx.eventLoop().newPromise();
                matcher.post(i, -1L, null, p);
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
        assertEquals(0, matcher.unexpectedCount());
        matcher.close(new ClosedChannelException());
        assertFalse(tx.finish());
        assertFalse(rx.finish());
        assertNull(rx.readInbound());
    }

    /**
     * A send cannot be taken back once written: Netty drops a write whose promise is cancelled, which would lose the
     * fragment the promise rides on and leave the message half sent. A send cancelled before it is written sends
     * nothing.
     */
    @Test
    void aSendCannotBeCancelledOnceWrittenAndACancelledOneSendsNothing() {
        EmbeddedChannel ch = new EmbeddedChannel(handler());
        io.netty.channel.ChannelPromise sent = ch.newPromise();
        ch.writeAndFlush(new TagMessage(1, Unpooled.wrappedBuffer(content(1, 5000))), sent);
        assertFalse(sent.cancel(false), "written: not cancellable");
        List<AmFrame> frames = drain(ch);
        assertEquals(5, frames.size(), "FIRST + 4 MIDDLE, all of them");
        frames.forEach(AmFrame::release);
        io.netty.channel.ChannelPromise cancelled = ch.newPromise();
        assertTrue(cancelled.cancel(false));
        io.netty.buffer.ByteBuf data = Unpooled.wrappedBuffer(content(2, 5000));
        ch.writeAndFlush(new TagMessage(2, data), cancelled);
        assertEquals(0, drain(ch).size(), "cancelled before it was sent: nothing goes out");
        assertEquals(0, data.refCnt(), "and its buffer is released");
        assertFalse(ch.finishAndReleaseAll());
    }
}
