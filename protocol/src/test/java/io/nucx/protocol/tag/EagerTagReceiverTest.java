package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.util.concurrent.Promise;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.ProtocolException;
import io.nucx.transport.AmFrame;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.nio.channels.ClosedChannelException;
import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class EagerTagReceiverTest {

    private final EmbeddedChannel ch = new EmbeddedChannel();
    private final TagMatcher matcher = new TagMatcher(ch.eventLoop(), ByteBufAllocator.DEFAULT, 1 << 20, (c, t) -> false);
    private final EagerTagReceiver receiver = new EagerTagReceiver(matcher);

    @AfterEach
    void tearDown() {
        matcher.close(new ClosedChannelException());
        assertFalse(ch.finishAndReleaseAll());
    }

    private static ByteBuf header(long... fields) {
        ByteBuf h = Unpooled.buffer(fields.length * 8);
        for (long f : fields) {
            h.writeLongLE(f);
        }
        return h;
    }

    private static ByteBuf text(String s) {
        return Unpooled.copiedBuffer(s, StandardCharsets.UTF_8);
    }

    @Test
    void eagerOnlyFrameReachesThePostedReceiveAndIsReleased() {
        Promise<TagMessage> p = ch.eventLoop().newPromise();
        matcher.post(42, -1L, null, p);
        AmFrame f = AmFrame.of(AmIds.EAGER_ONLY, 0, header(42), text("hello"));
        receiver.onFrame(ch, f);
        assertEquals(0, f.refCnt());
        TagMessage m = p.getNow();
        assertEquals("hello", m.content().toString(StandardCharsets.UTF_8));
        m.release();
    }

    @Test
    void firstAndMiddleFramesReassemble() {
        Promise<TagMessage> p = ch.eventLoop().newPromise();
        matcher.post(42, -1L, null, p);
        receiver.onFrame(ch, AmFrame.of(AmIds.EAGER_FIRST, 0, header(42, 10, 7), text("hello")));
        assertFalse(p.isDone());
        receiver.onFrame(ch, AmFrame.of(AmIds.EAGER_MIDDLE, 0, header(7, 5), text("world")));
        TagMessage m = p.getNow();
        assertEquals("helloworld", m.content().toString(StandardCharsets.UTF_8));
        m.release();
    }

    @Test
    void headerOfTheWrongLengthIsAProtocolErrorAndTheFrameIsReleased() {
        AmFrame f = AmFrame.of(AmIds.EAGER_FIRST, 0, header(42, 10), text("hello"));
        ProtocolException e = assertThrows(ProtocolException.class, () -> receiver.onFrame(ch, f));
        assertTrue(e.getMessage().contains("EAGER_FIRST"), e.getMessage());
        assertEquals(0, f.refCnt());
        assertEquals(0, matcher.unexpectedCount());
    }

    @Test
    void frameOfAnotherProtocolIsAProtocolErrorAndIsReleased() {
        AmFrame f = AmFrame.of(AmIds.WIREUP, 0, header(1), text("x"));
        assertThrows(ProtocolException.class, () -> receiver.onFrame(ch, f));
        assertEquals(0, f.refCnt());
    }
}
