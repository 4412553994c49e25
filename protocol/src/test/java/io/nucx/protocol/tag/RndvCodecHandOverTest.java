package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.util.concurrent.Promise;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.EndpointConfig;
import io.nucx.protocol.ProtocolException;
import io.nucx.transport.AmFrame;
import io.nucx.transport.Capability;
import io.nucx.transport.IfaceAttributes;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.channels.ClosedChannelException;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;

import static io.nucx.protocol.tag.RndvEndpoint.ats;
import static io.nucx.protocol.tag.RndvEndpoint.pattern;
import static io.nucx.protocol.tag.RndvEndpoint.rtr;
import static io.nucx.protocol.tag.RndvEndpoint.rts;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code tag/rndv} over a lane that hands payloads to the receiver as they are (self): the fragments are slices of
 * the user's buffer flagged {@link RndvHeaders#DATA_FLAG_ATS}, the send waits for the receiver's ATS, which the
 * receiver sends once it has every byte (copied); over a lane that copies, neither flag nor ATS.
 */
@Timeout(60)
class RndvCodecHandOverTest {

    private static final int MAX_BCOPY = 65536;
    private static final int FRAGMENT = MAX_BCOPY - RndvHeaders.DATA_LENGTH;

    private final List<RndvEndpoint> endpoints = new ArrayList<>();

    @AfterEach
    void tearDown() {
        endpoints.forEach(RndvEndpoint::close);
    }

    /**
     * A lane that hands over every payload as it is (amCopyMax 0) and has no AM zero-copy: self above its 1 KiB
     * amCopyMax, which is where a rendezvous's fragments are.
     */
    private static EndpointConfig handingOver() {
        return new EndpointConfig("test/self", new IfaceAttributes(EnumSet.of(Capability.AM_SHORT,
                Capability.AM_BCOPY), 8192, MAX_BCOPY, 64, 1e-6, 0, 1e9, 0, 1e-7, 0, 0, 0));
    }

    private RndvEndpoint endpoint(EndpointConfig config) {
        RndvEndpoint ep = new RndvEndpoint(RndvScheme.AUTO, config, false);
        endpoints.add(ep);
        return ep;
    }

    /** Sends {@code content}; returns the sender's request id from the RTS that went out. */
    private static long send(RndvEndpoint ep, ByteBuf content, ChannelFuture[] f) {
        f[0] = ep.ch.writeAndFlush(new RndvSendRequest(0x51, content));
        AmFrame rts = ep.ch.readOutbound();
        try {
            assertEquals(AmIds.RNDV_RTS, rts.amId());
            return rts.header().getLongLE(8);
        } finally {
            rts.release();
        }
    }

    /** The RNDV_DATA frames written, in order, checked to carry {@code flags}; the caller releases them. */
    private static List<AmFrame> dataFrames(RndvEndpoint ep, int flags) {
        List<AmFrame> frames = new ArrayList<>();
        for (AmFrame f; (f = ep.ch.readOutbound()) != null; ) {
            frames.add(f);
            assertEquals(AmIds.RNDV_DATA, f.amId());
            assertEquals(flags, f.flags());
        }
        return frames;
    }

    @Test
    void overALaneThatHandsPayloadsOverTheSendWaitsForTheReceiversAts() {
        RndvEndpoint ep = endpoint(handingOver());
        byte[] data = pattern(11, 150_000);
        ByteBuf content = Unpooled.directBuffer(data.length).writeBytes(data);
        ChannelFuture[] f = new ChannelFuture[1];
        long id = send(ep, content, f);
        ep.ch.writeInbound(rtr(id, 700, data.length, null));
        List<AmFrame> frames = dataFrames(ep, RndvHeaders.DATA_FLAG_ATS);
        try {
            assertEquals(3, frames.size());
            byte[] got = new byte[data.length];
            for (AmFrame fr : frames) {
                long offset = fr.header().getLongLE(8);
                assertEquals(Math.min(FRAGMENT, data.length - offset), fr.payload().readableBytes());
                fr.payload().getBytes(fr.payload().readerIndex(), got, (int) offset,
                        fr.payload().readableBytes());
                assertEquals(content.memoryAddress() + offset, fr.payload().memoryAddress(),
                        "a slice of the user's buffer, not a copy");
            }
            assertArrayEquals(data, got);
            assertFalse(f[0].isDone(), "the receiver may still be reading them");
            assertEquals(1, ep.codec.sendsWaiting(), "a graceful close waits for it");
            assertTrue(content.refCnt() > 0);
            ProtocolException e = assertThrows(ProtocolException.class,
                    () -> ep.ch.writeInbound(rtr(id, 701, data.length, null)));
            assertTrue(e.getMessage().contains("whose data were sent already"), e.getMessage());
        } finally {
            frames.forEach(AmFrame::release);
        }
        ep.ch.writeInbound(ats(id, RndvHeaders.STATUS_OK));
        assertTrue(f[0].isSuccess());
        assertEquals(0, content.refCnt(), "released on the ATS");
        assertEquals(0, ep.codec.sendsWaiting());
    }

    @Test
    void aSendWaitingForItsAtsFailsWhenTheEndpointEnds() {
        RndvEndpoint ep = endpoint(handingOver());
        ByteBuf content = Unpooled.directBuffer(100_000).writeZero(100_000);
        ChannelFuture[] f = new ChannelFuture[1];
        long id = send(ep, content, f);
        ep.ch.writeInbound(rtr(id, 702, 100_000, null));
        dataFrames(ep, RndvHeaders.DATA_FLAG_ATS).forEach(AmFrame::release);
        ep.codec.endpointEnded(new ClosedChannelException());
        assertInstanceOf(ClosedChannelException.class, f[0].cause());
        assertEquals(0, content.refCnt());
    }

    @Test
    void overALaneThatCopiesTheLastFragmentCompletesTheSendAndNoAtsIsAskedFor() {
        RndvEndpoint ep = endpoint(RndvEndpoint.defaultLane());
        ByteBuf content = Unpooled.directBuffer(100_000).writeZero(100_000);
        ChannelFuture[] f = new ChannelFuture[1];
        long id = send(ep, content, f);
        ep.ch.writeInbound(rtr(id, 703, 100_000, null));
        dataFrames(ep, 0).forEach(AmFrame::release);
        assertTrue(f[0].isSuccess());
        assertEquals(0, ep.codec.sendsWaiting());
    }

    @Test
    void theReceiverAnswersFlaggedFragmentsWithAnAtsOnceItHasThemAll() {
        RndvEndpoint ep = endpoint(RndvEndpoint.defaultLane());
        byte[] data = pattern(12, 3000);
        Promise<TagMessage> p = ep.receives.post(9, -1L);
        ep.arrive(rts(9, 83, data.length, null));
        long receiverReq = rtrReceiverReq(ep);
        // Out of order, as several lanes may deliver them: the ATS follows the one that completes the message.
        ep.arrive(RndvEndpoint.data(receiverReq, 2000, Unpooled.wrappedBuffer(data, 2000, 1000),
                RndvHeaders.DATA_FLAG_ATS));
        assertNull(ep.ch.readOutbound(), "no ATS before every byte has arrived");
        ep.arrive(RndvEndpoint.data(receiverReq, 0, Unpooled.wrappedBuffer(data, 0, 2000), RndvHeaders.DATA_FLAG_ATS));
        AmFrame a = ep.ch.readOutbound();
        try {
            assertEquals(AmIds.RNDV_ATS, a.amId(), () -> "got " + AmIds.name(a.amId()));
            assertEquals(83, a.header().getLongLE(0));
            assertEquals(RndvHeaders.STATUS_OK, a.header().getByte(8));
        } finally {
            a.release();
        }
        assertArrayEquals(data, ep.receives.bytes(p));

        Promise<TagMessage> unflagged = ep.receives.post(10, -1L);
        ep.arrive(rts(10, 84, 10, null));
        receiverReq = rtrReceiverReq(ep);
        ep.arrive(RndvEndpoint.data(receiverReq, 0, Unpooled.wrappedBuffer(new byte[10])));
        assertNull(ep.ch.readOutbound(), "unflagged fragments: no ATS");
        assertArrayEquals(new byte[10], ep.receives.bytes(unflagged));
    }

    private static long rtrReceiverReq(RndvEndpoint ep) {
        AmFrame f = ep.ch.readOutbound();
        try {
            assertEquals(AmIds.RNDV_RTR, f.amId());
            return f.header().getLongLE(8);
        } finally {
            f.release();
        }
    }
}
