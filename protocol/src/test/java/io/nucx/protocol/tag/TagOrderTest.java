package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.ProtocolCodec;
import io.nucx.protocol.ProtocolRegistry;
import io.nucx.protocol.ProtocolSettings;
import io.nucx.protocol.TestEndpoint;
import io.nucx.protocol.WorkerProtocols;
import io.nucx.protocol.rma.RmaCodec;
import io.nucx.transport.AmFrame;
import org.junit.jupiter.api.Test;

import java.nio.channels.ClosedChannelException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * {@link TagOrder}: tagged messages go up an endpoint's pipeline in the order their first frames arrived, whatever
 * protocol carried each; a message still arriving ({@link PipelineSlot}) holds back what came after it. First the
 * handler alone with slots the test completes, then the protocol codecs of an endpoint in front of it.
 */
class TagOrderTest {

    /** Records what reaches the user's handler, as text, and counts read-complete events. */
    private static final class User extends ChannelInboundHandlerAdapter {
        final List<String> read = new ArrayList<>();
        int readCompletes;
        Runnable onFirstRead;

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (msg instanceof TagMessage m) {
                try {
                    read.add(m.content().toString(StandardCharsets.UTF_8));
                } finally {
                    m.release();
                }
                if (onFirstRead != null) {
                    Runnable r = onFirstRead;
                    onFirstRead = null;
                    r.run();
                }
            } else {
                read.add(String.valueOf(msg));
            }
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            readCompletes++;
        }
    }

    private static TagMessage message(String s) {
        return new TagMessage(1, Unpooled.copiedBuffer(s, StandardCharsets.UTF_8));
    }

    private final TagOrder order = new TagOrder();
    private final User user = new User();
    private final EmbeddedChannel ch = new EmbeddedChannel(order, user);

    @Test
    void wholeMessagesWithNothingAheadPassStraightThrough() {
        ch.writeInbound(message("a"), message("b"));
        assertEquals(List.of("a", "b"), user.read);
        assertEquals(0, order.waiting());
        assertFalse(ch.finishAndReleaseAll());
    }

    @Test
    void anIncompleteSlotHoldsBackWhatCameAfterItThenAllGoInArrivalOrder() {
        PipelineSlot first = new PipelineSlot();
        PipelineSlot third = new PipelineSlot();
        ch.writeInbound(first, message("2"), third, message("4"));
        assertEquals(List.of(), user.read, "everything waits behind the first");
        assertEquals(4, order.waiting());
        int completes = user.readCompletes;
        third.complete(message("3"));
        assertEquals(List.of(), user.read, "the third is whole, but the first is not");
        first.complete(message("1"));
        assertEquals(List.of("1", "2", "3", "4"), user.read);
        assertEquals(0, order.waiting());
        assertEquals(completes + 1, user.readCompletes, "a read-complete follows: the slot completed outside a read");
        ch.writeInbound(message("5"));
        assertEquals(List.of("1", "2", "3", "4", "5"), user.read);
        assertFalse(ch.finishAndReleaseAll());
    }

    @Test
    void aSlotCompletingBehindAnotherWaitsItsTurn() {
        PipelineSlot first = new PipelineSlot();
        PipelineSlot second = new PipelineSlot();
        ch.writeInbound(first, second, message("3"));
        first.complete(message("1"));
        assertEquals(List.of("1"), user.read);
        assertEquals(2, order.waiting());
        second.complete(message("2"));
        assertEquals(List.of("1", "2", "3"), user.read);
        assertFalse(ch.finishAndReleaseAll());
    }

    @Test
    void anAbortedSlotIsSkippedAndWhatCompletesItLaterIsReleased() {
        PipelineSlot dead = new PipelineSlot();
        ch.writeInbound(message("1"), dead, message("3"));
        assertEquals(List.of("1"), user.read);
        dead.abort();
        assertEquals(List.of("1", "3"), user.read);
        assertEquals(0, order.waiting());
        TagMessage late = message("late");
        dead.complete(late);
        assertEquals(0, late.refCnt(), "given up: a late message is released, not delivered");
        assertEquals(List.of("1", "3"), user.read);
        dead.abort(); // twice: nothing
        assertFalse(ch.finishAndReleaseAll());
    }

    @Test
    void aSlotDoneBeforeItArrivesGoesStraightThroughOrNotAtAll() {
        PipelineSlot done = new PipelineSlot();
        done.complete(message("whole already"));
        PipelineSlot given = new PipelineSlot();
        given.abort();
        ch.writeInbound(done, given, message("next"));
        assertEquals(List.of("whole already", "next"), user.read);
        assertEquals(0, order.waiting());
        assertFalse(ch.finishAndReleaseAll());
    }

    @Test
    void whatIsNotATaggedMessagePassesAtOnce() {
        PipelineSlot slot = new PipelineSlot();
        ch.writeInbound(slot, "not a tagged message");
        assertEquals(List.of("not a tagged message"), user.read);
        slot.complete(message("m"));
        assertEquals(List.of("not a tagged message", "m"), user.read);
        assertFalse(ch.finishAndReleaseAll());
    }

    /** A user's handler completing the next slot while it reads the one before: each once, in order. */
    @Test
    void aSlotCompletedFromInsideADeliveryKeepsTheOrder() {
        PipelineSlot first = new PipelineSlot();
        PipelineSlot second = new PipelineSlot();
        ch.writeInbound(first, second, message("3"));
        user.onFirstRead = () -> second.complete(message("2"));
        first.complete(message("1"));
        assertEquals(List.of("1", "2", "3"), user.read);
        assertEquals(0, order.waiting());
        assertFalse(ch.finishAndReleaseAll());
    }

    @Test
    void removingTheHandlerReleasesWhatWaitsAndSlotsCompletedLaterAreReleased() {
        PipelineSlot first = new PipelineSlot();
        PipelineSlot third = new PipelineSlot();
        TagMessage second = message("2");
        ch.writeInbound(first, second, third);
        ch.pipeline().remove(order);
        assertEquals(0, second.refCnt(), "released with the handler");
        assertEquals(0, order.waiting());
        TagMessage late = message("1");
        first.complete(late);
        assertEquals(0, late.refCnt(), "the pipeline is gone: released");
        third.abort();
        assertEquals(List.of(), user.read);
        assertFalse(ch.finishAndReleaseAll());
    }

    // ------------------------------------------------------------ behind the protocol codecs

    private static AmFrame eagerOnly(String s) {
        return AmFrame.of(AmIds.EAGER_ONLY, 0, Unpooled.buffer(8).writeLongLE(5),
                Unpooled.copiedBuffer(s, StandardCharsets.UTF_8));
    }

    private static AmFrame rts(long senderReqId, int size) {
        return AmFrame.of(AmIds.RNDV_RTS, RndvHeaders.writeRts(Unpooled.buffer(), 5, senderReqId, size, null));
    }

    private static AmFrame data(long receiverReqId, long offset, String s) {
        return AmFrame.of(AmIds.RNDV_DATA, 0, Unpooled.buffer(16).writeLongLE(receiverReqId).writeLongLE(offset),
                Unpooled.copiedBuffer(s, StandardCharsets.UTF_8));
    }

    /** An endpoint's pipeline as the registry builds it, every tag for the pipeline, {@code user} on top. */
    private static List<ProtocolCodec> codecPipeline(EmbeddedChannel ep, User user) {
        WorkerProtocols worker = TestEndpoint.worker(ep, ProtocolSettings.defaults(ProtocolRegistry.DEFAULT));
        TestEndpoint services = new TestEndpoint(ep, TestEndpoint.amLane(128, 1024)).toPipeline(t -> true);
        List<ProtocolCodec> codecs = ProtocolRegistry.DEFAULT.initPipeline(ep.pipeline(), services, worker);
        ep.pipeline().addLast(user);
        return codecs;
    }

    /**
     * An endpoint's pipeline as the registry builds it, every tag for the pipeline: small eager messages, a rendezvous
     * message whose data come late, a fragmented eager one. The user sees them in the order the peer wrote them.
     */
    @Test
    void aSlowRendezvousMessageHoldsBackLaterSmallOnesThroughTheCodecs() {
        EmbeddedChannel ep = new EmbeddedChannel();
        User u = new User();
        List<ProtocolCodec> codecs = codecPipeline(ep, u);
        assertEquals(List.of(RmaCodec.NAME, "nucx.amo", RndvCodec.NAME, EagerCodec.NAME,
                TagOrder.NAME), ep.pipeline().names().subList(0, 5),
                "the last family nearest the lanes, the order on top");
        ep.writeInbound(eagerOnly("a"));
        ep.writeInbound(rts(70, 6)); // "bbbbbb", asked for by RTR
        AmFrame rtr = ep.readOutbound();
        assertEquals(AmIds.RNDV_RTR, rtr.amId());
        long receiverReq = rtr.header().getLongLE(8);
        rtr.release();
        ep.writeInbound(eagerOnly("c"));
        ep.writeInbound(AmFrame.of(AmIds.EAGER_FIRST, 0, Unpooled.buffer(24).writeLongLE(5).writeLongLE(4)
                .writeLongLE(900), Unpooled.copiedBuffer("dd", StandardCharsets.UTF_8)));
        ep.writeInbound(eagerOnly("e"));
        assertEquals(List.of("a"), u.read);
        ep.writeInbound(data(receiverReq, 3, "bbb"));
        assertEquals(List.of("a"), u.read, "half of it");
        ep.writeInbound(data(receiverReq, 0, "bbb"));
        assertEquals(List.of("a", "bbbbbb", "c"), u.read, "then what waited behind it, up to the next incomplete");
        ep.writeInbound(AmFrame.of(AmIds.EAGER_MIDDLE, 0, Unpooled.buffer(16).writeLongLE(900).writeLongLE(2),
                Unpooled.copiedBuffer("DD", StandardCharsets.UTF_8)));
        assertEquals(List.of("a", "bbbbbb", "c", "ddDD", "e"), u.read);
        assertNull(ep.readOutbound(), "nothing else answered");
        codecs.forEach(c -> c.endpointEnded(new ClosedChannelException()));
        assertFalse(ep.finishAndReleaseAll());
    }

    @Test
    void aRendezvousMessageWhoseEndpointEndsIsSkippedAndWhatWaitedGoesOn() {
        EmbeddedChannel ep = new EmbeddedChannel();
        User u = new User();
        List<ProtocolCodec> codecs = codecPipeline(ep, u);
        ep.writeInbound(rts(71, 1000));
        ((AmFrame) ep.readOutbound()).release(); // the RTR
        ByteBuf c = Unpooled.copiedBuffer("c", StandardCharsets.UTF_8);
        ep.writeInbound(AmFrame.of(AmIds.EAGER_ONLY, 0, Unpooled.buffer(8).writeLongLE(5), c));
        assertEquals(List.of(), u.read);
        codecs.forEach(codec -> codec.endpointEnded(new ClosedChannelException()));
        assertEquals(List.of("c"), u.read, "the message that cannot come is skipped");
        assertEquals(0, c.refCnt());
        assertFalse(ep.finishAndReleaseAll());
    }
}
