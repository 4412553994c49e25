package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.ProtocolException;
import io.nucx.protocol.TestEndpoint;
import io.nucx.protocol.WorkerProtocols;
import io.nucx.protocol.am.AmHeaders;
import io.nucx.protocol.am.AmIncoming;
import io.nucx.transport.AmFrame;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.channels.ClosedChannelException;
import java.nio.charset.StandardCharsets;

import static io.nucx.protocol.tag.EagerCodecReceiveTest.header;
import static io.nucx.protocol.tag.EagerCodecReceiveTest.text;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Active-message frames arriving at the eager and rendezvous codecs of an embedded endpoint: a whole or reassembled
 * message goes up the pipeline as one {@link AmIncoming} with its header and data split where the tag field says; a
 * tag field or payload that disagree is a {@link ProtocolException} naming the values, and nothing goes up.
 */
class AmFramesTest {

    private EmbeddedChannel ch;
    private EagerCodec eager;
    private RndvCodec rndv;

    @BeforeEach
    void setUp() {
        ch = new EmbeddedChannel();
        WorkerProtocols worker = TestEndpoint.worker(ch, TestEndpoint.settings(1 << 20, RndvScheme.AUTO,
                EagerProtocols.ALL));
        TestEndpoint services = new TestEndpoint(ch, TestEndpoint.amLane(128, 1024));
        rndv = new RndvCodec(services, worker);
        eager = new EagerCodec(services, worker);
        ch.pipeline().addLast(rndv, eager);
    }

    @AfterEach
    void tearDown() {
        eager.endpointEnded(new ClosedChannelException());
        rndv.endpointEnded(new ClosedChannelException());
        assertFalse(ch.finishAndReleaseAll());
    }

    private static String string(ByteBuf b) {
        return b.toString(b.readerIndex(), b.readableBytes(), StandardCharsets.UTF_8);
    }

    @Test
    void wholeAndReassembledMessagesGoUpWithHeaderAndDataSplit() {
        ch.writeInbound(AmFrame.of(AmIds.AM_ONLY, 0, header(AmHeaders.pack(7, AmHeaders.FLAG_REPLY, 3)),
                text("hdrpayload")));
        AmIncoming m = assertInstanceOf(AmIncoming.class, ch.readInbound());
        try {
            assertEquals(7, m.id());
            assertTrue(m.replyRequested());
            assertFalse(m.isRendezvous());
            assertEquals("hdr", string(m.header()));
            assertEquals("payload", string(m.data()));
            assertEquals(7, m.dataLength());
        } finally {
            m.release();
        }
        assertThrows(IllegalStateException.class, m::header);

        // 6-byte header spread over the first fragment and a middle one
        long tag = AmHeaders.pack(9, 0, 6);
        ch.writeInbound(AmFrame.of(AmIds.AM_FIRST, 0, header(tag, 10, 77), text("head")));
        assertNull(ch.readInbound(), "went up before it was whole");
        ch.writeInbound(AmFrame.of(AmIds.EAGER_MIDDLE, 0, header(77, 4), text("erdata")));
        m = assertInstanceOf(AmIncoming.class, ch.readInbound());
        try {
            assertEquals(9, m.id());
            assertFalse(m.replyRequested());
            assertEquals("header", string(m.header()));
            assertEquals("data", string(m.data()));
        } finally {
            m.release();
        }
    }

    /**
     * An eager message's data received into a buffer of the handler's, with or without a look at {@link
     * AmIncoming#data} first (what the handler read of it is not received again), and with no header at all; the
     * payload is released with the message either way.
     */
    @Test
    void eagerDataAreReceivedFromThePayloadWhetherOrNotTheHandlerLookedAtThem() {
        ByteBuf payload = text("hdrpayload");
        ch.writeInbound(AmFrame.of(AmIds.AM_ONLY, 0, header(AmHeaders.pack(7, 0, 3)), payload.retain()));
        AmIncoming m = assertInstanceOf(AmIncoming.class, ch.readInbound());
        ByteBuf into = Unpooled.buffer(16);
        try {
            m.receive(into, ch.eventLoop().newPromise());
            assertEquals("payload", string(into));
            assertEquals("hdr", string(m.header()));
        } finally {
            m.release();
            into.release();
        }
        assertEquals(1, payload.refCnt(), "the message let go of the payload");

        ch.writeInbound(AmFrame.of(AmIds.AM_ONLY, 0, header(AmHeaders.pack(8, 0, 0)), payload.retain()));
        m = assertInstanceOf(AmIncoming.class, ch.readInbound());
        into = Unpooled.buffer(16);
        try {
            assertFalse(m.header().isReadable(), "no header");
            assertEquals('h', (char) m.data().readByte());
            m.receive(into, ch.eventLoop().newPromise());
            assertEquals("drpayload", string(into));
        } finally {
            m.release();
            into.release();
        }
        assertEquals(1, payload.refCnt(), "the message let go of the payload");
        payload.release();
        assertThrows(IllegalStateException.class, m::data);
    }

    @Test
    void aHeaderLongerThanThePayloadOrTheLimitIsAProtocolError() {
        ByteBuf payload = text("abcd");
        AmFrame shortPayload = AmFrame.of(AmIds.AM_ONLY, 0, header(AmHeaders.pack(1, 0, 10)), payload);
        ProtocolException e = assertThrows(ProtocolException.class, () -> ch.writeInbound(shortPayload));
        assertTrue(e.getMessage().contains("4 bytes announces a 10-byte header"), e.getMessage());
        assertEquals(0, payload.refCnt());

        AmFrame overLimit = AmFrame.of(AmIds.AM_ONLY, 0, header(AmHeaders.pack(1, 0, AmHeaders.MAX_HEADER + 1)),
                text("x"));
        e = assertThrows(ProtocolException.class, () -> ch.writeInbound(overLimit));
        assertTrue(e.getMessage().contains("header length 4097 (at most 4096)"), e.getMessage());

        AmFrame unknownFlag = AmFrame.of(AmIds.AM_ONLY, 0, header(AmHeaders.pack(1, 0x80, 0)), text("x"));
        e = assertThrows(ProtocolException.class, () -> ch.writeInbound(unknownFlag));
        assertTrue(e.getMessage().contains("unknown flags"), e.getMessage());

        AmFrame firstTooShort = AmFrame.of(AmIds.AM_FIRST, 0, header(AmHeaders.pack(1, 0, 20), 10, 5), text("ab"));
        e = assertThrows(ProtocolException.class, () -> ch.writeInbound(firstTooShort));
        assertTrue(e.getMessage().contains("of 10 bytes announces a 20-byte header"), e.getMessage());
        assertNull(ch.readInbound());
    }

    @Test
    void anRtsWhosePayloadIsNotTheHeaderItAnnouncesIsAProtocolError() {
        AmFrame rts = AmFrame.of(AmIds.AM_RTS, 0, RndvHeaders.writeRts(Unpooled.buffer(RndvHeaders.RTS_LENGTH),
                AmHeaders.pack(2, 0, 5), 1, 100_000, null), text("abc"));
        ProtocolException e = assertThrows(ProtocolException.class, () -> ch.writeInbound(rts));
        assertTrue(e.getMessage().contains("AM_RTS 1 carries 3 header bytes, its tag field says 5"), e.getMessage());
        assertNull(ch.readInbound());
        assertEquals(0, rts.refCnt());

        ch.writeInbound(AmFrame.of(AmIds.AM_RTS, 0, RndvHeaders.writeRts(Unpooled.buffer(RndvHeaders.RTS_LENGTH),
                AmHeaders.pack(2, 0, 3), 2, 100_000, null), text("abc")));
        AmIncoming m = assertInstanceOf(AmIncoming.class, ch.readInbound());
        assertTrue(m.isRendezvous());
        assertEquals("abc", string(m.header()));
        assertEquals(100_000, m.dataLength());
        assertThrows(IllegalStateException.class, m::data);
        m.release(); // nobody asked for the data: the sender is told it is done (ATS OK)
        AmFrame ats = assertInstanceOf(AmFrame.class, ch.readOutbound());
        try {
            assertEquals(AmIds.RNDV_ATS, ats.amId());
            assertEquals(2, ats.header().getLongLE(0));
            assertEquals(RndvHeaders.STATUS_OK, ats.header().getByte(8));
        } finally {
            ats.release();
        }
    }
}
