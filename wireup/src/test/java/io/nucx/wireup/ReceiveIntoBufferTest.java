package io.nucx.wireup;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.util.concurrent.Future;
import io.nucx.Endpoint;
import io.nucx.ErrorMode;
import io.nucx.Worker;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.ProtocolCounters;
import io.nucx.protocol.tag.MessageTruncatedException;
import io.nucx.protocol.tag.TagMessage;
import io.nucx.protocol.tag.TagReceive;
import io.nucx.transport.AmFrame;
import io.nucx.transport.PayloadPlacement;
import io.nucx.transport.shm.ShmChannel;
import io.nucx.transport.tcp.AmFrameDecoder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import static io.nucx.wireup.TestWorkers.assertPattern;
import static io.nucx.wireup.TestWorkers.pattern;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A reusable receive with the user's buffer ({@link TagReceive#reusable(long, long, ByteBuf, TagReceive.Handler)}):
 * every message, eager or rendezvous, lands in that buffer and the handler gets a slice of it; over tcp the fragments
 * of a large message are read from the socket straight into it; a message longer than the room left fails the
 * receive with {@link MessageTruncatedException} and the endpoint goes on.
 */
@Timeout(120)
class ReceiveIntoBufferTest {

    @RegisterExtension
    final TestWorkers workers = new TestWorkers();

    /** What the handler got: a message (tag, data: owned) or a failure. */
    private record Got(long tag, ByteBuf data, Throwable failure) {
    }

    private static TagReceive into(ByteBuf into, BlockingQueue<Got> got) {
        return TagReceive.reusable(0, 0, into, new TagReceive.Handler() {
            @Override
            public void received(long tag, ByteBuf data) {
                got.add(new Got(tag, data, null));
            }

            @Override
            public void failed(Throwable cause) {
                got.add(new Got(-1, null, cause));
            }
        });
    }

    /**
     * Sends messages of {@code sizes} (tags from {@code firstTag}) from {@code ep} into a reusable receive of
     * {@code b}'s with {@code buffer}, one at a time: each must land whole in the buffer, from its start.
     */
    private static void sendEachInto(Endpoint ep, Worker b, ByteBuf buffer, int firstTag, int... sizes)
            throws Exception {
        BlockingQueue<Got> got = new LinkedBlockingQueue<>();
        TagReceive receive = into(buffer, got);
        for (int i = 0; i < sizes.length; i++) {
            b.eventLoop().submit(() -> b.tagRecv(receive)).get(10, TimeUnit.SECONDS);
            assertTrue(ep.tagSend(firstTag + i, pattern(i, sizes[i])).await(30, TimeUnit.SECONDS));
            Got g = got.poll(30, TimeUnit.SECONDS);
            assertNotNull(g, "message " + i + " of " + sizes[i] + " bytes did not arrive");
            assertEquals(null, g.failure());
            try {
                assertEquals(firstTag + i, g.tag());
                assertPattern(i, sizes[i], g.data());
                assertEquals(buffer.memoryAddress(), g.data().memoryAddress() + g.data().readerIndex(),
                        "message " + i + " is in the user's buffer, from its start");
                assertEquals(sizes[i], buffer.writerIndex(), "the buffer's writer index follows the message");
            } finally {
                g.data().release();
            }
            buffer.clear();
        }
    }

    @Test
    void everyMessageLandsInTheUsersBufferAndLargeFragmentsComeStraightFromTheTcpLane() throws Exception {
        // epoll: tcp lanes place payloads on epoll and nio, not on io_uring (the default without busy-polling).
        Worker a = workers.start("a", "TLS", "tcp", "TCP_IO", "epoll");
        Worker b = workers.start("b", "TLS", "tcp", "TCP_IO", "epoll");
        Endpoint ep = TestWorkers.wiredUp(a, b);
        Endpoint accepted = b.endpoints().iterator().next();
        ByteBuf buffer = PooledByteBufAllocator.DEFAULT.directBuffer(4 << 20, 4 << 20);
        try {
            sendEachInto(ep, b, buffer, 100, 8, 50_000, 100_000, 1 << 20, 3, 3 << 20);
            AmFrameDecoder decoder = TestWorkers.impl(accepted).amLane().pipeline().get(AmFrameDecoder.class);
            long placed = b.eventLoop().submit(decoder::placedBytes).get(10, TimeUnit.SECONDS);
            assertTrue(placed > (1 << 20), () -> "only " + placed + " bytes came from the socket straight into the "
                    + "user's buffer");
        } finally {
            buffer.release();
        }
    }

    /**
     * Receives of one tag posted ahead take that tag's messages in the order they were sent, each into its own buffer,
     * over a tcp lane that places payloads: a message is matched when the header of its only or first frame has come
     * ({@code EagerReceiver.placeOnly}, {@code placeFirst}), possibly long before its payload, and the next one only
     * after it. Single-frame (50,000 B) and multi-frame (300,000 B) messages alternate.
     */
    @Test
    void receivesOfOneTagTakeLargeMessagesInTheirOrderWhenTheFirstFragmentIsPlaced() throws Exception {
        Worker a = workers.start("a", "TLS", "tcp", "TCP_IO", "epoll", "RNDV_THRESH", "1g");
        Worker b = workers.start("b", "TLS", "tcp", "TCP_IO", "epoll", "RNDV_THRESH", "1g");
        Endpoint ep = TestWorkers.wiredUp(a, b);
        Endpoint accepted = b.endpoints().iterator().next();
        int n = 6;
        int size = 300_000;
        List<ByteBuf> buffers = new ArrayList<>();
        List<Future<TagMessage>> received = new ArrayList<>();
        try {
            for (int i = 0; i < n; i++) {
                ByteBuf buffer = PooledByteBufAllocator.DEFAULT.directBuffer(size, size);
                buffers.add(buffer);
                received.add(b.eventLoop().submit(() -> b.tagRecv(7, -1L, buffer)).get(10, TimeUnit.SECONDS));
            }
            List<ChannelFuture> sent = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                sent.add(ep.tagSend(7, pattern(i, i % 2 == 0 ? size : 50_000)));
            }
            for (int i = 0; i < n; i++) {
                assertTrue(sent.get(i).await(30, TimeUnit.SECONDS) && sent.get(i).isSuccess(), "send " + i);
                TagMessage m = received.get(i).get(30, TimeUnit.SECONDS);
                try {
                    assertPattern(i, i % 2 == 0 ? size : 50_000, m.content()); // message i, in receive i's buffer
                    assertEquals(buffers.get(i).memoryAddress(),
                            m.content().memoryAddress() + m.content().readerIndex());
                } finally {
                    m.release();
                }
            }
            AmFrameDecoder decoder = TestWorkers.impl(accepted).amLane().pipeline().get(AmFrameDecoder.class);
            long placed = b.eventLoop().submit(decoder::placedBytes).get(10, TimeUnit.SECONDS);
            assertTrue(placed > 0, "nothing came from the socket straight into a buffer");
        } finally {
            buffers.forEach(ByteBuf::release);
        }
    }

    /**
     * Over shm, every fragment of an eager message (the first one too: the receive is matched by its header, before
     * its payload is copied) and a rendezvous's data (forced from 64 KiB) of a message received into the user's
     * buffer go from the ring straight into it: one copy on the receiver, none through a buffer of the lane's. A
     * message one ring record holds (up to the 64 KiB segment, less the tag) goes as an eager short record.
     */
    @ParameterizedTest
    @ValueSource(strings = {"eager", "rndv"})
    void overShmLargeFragmentsGoFromTheRingStraightIntoTheUsersBuffer(String protocol) throws Exception {
        String thresh = protocol.equals("rndv") ? "64k" : "1g";
        Worker a = workers.start("a", "TLS", "shm", "RNDV_THRESH", thresh);
        Worker b = workers.start("b", "TLS", "shm", "RNDV_THRESH", thresh);
        Endpoint ep = TestWorkers.wiredUp(a, b);
        Endpoint accepted = b.endpoints().iterator().next();
        ByteBuf buffer = PooledByteBufAllocator.DEFAULT.directBuffer(4 << 20, 4 << 20);
        try {
            sendEachInto(ep, b, buffer, 100, 8, 2_000, 65_528, 100_000, 1 << 20, 3, 3 << 20);
            ShmChannel lane = (ShmChannel) TestWorkers.impl(accepted)
                    .amLane();
            long placed = b.eventLoop().submit(lane::placedBytes).get(10, TimeUnit.SECONDS);
            // Every byte of the three messages over 64 KiB but a last fragment under the 1 KiB the ring places
            // from (each first fragment too: 196,536 bytes that were copied twice before), and nothing of the
            // smaller ones, which went as short records.
            long large = 100_000 + (1 << 20) + (3 << 20);
            assertTrue(placed <= large && placed > large - 3 * 1024, () -> placed + " bytes copied from the ring "
                    + "straight into the user's buffer, of " + large);
            ProtocolCounters.Traffic shortSent = a.counters().traffic("egr/short", "shm");
            assertEquals(4, shortSent.messages(), "8, 2,000, 65,528 and 3 bytes");
            assertEquals(8 + 2_000 + 65_528 + 3, shortSent.bytes());
        } finally {
            buffer.release();
        }
    }

    /**
     * A rendezvous into the user's buffer over tcp lanes that place payloads comes in frames as large as the lane
     * sends placed: the receiver offers the whole message in its RTR, the sender sends frames flagged as placed, up to
     * its lanes' limit, and the socket reads them straight into the buffer. With NUCX_TCP_PLACE=n the data come as
     * segments (128 KiB, less the header), as before.
     */
    @ParameterizedTest
    @ValueSource(strings = {"y", "n"})
    void aRendezvousIntoTheUsersBufferComesInLargePlacedFrames(String place) throws Exception {
        String[] settings = {"TLS", "tcp", "TCP_IO", "epoll", "RNDV_THRESH", "64k", "TCP_PLACE", place};
        Worker a = workers.start("a", settings);
        Worker b = workers.start("b", settings);
        Endpoint ep = TestWorkers.wiredUp(a, b);
        Endpoint accepted = b.endpoints().iterator().next();
        // What comes up b's lane as rendezvous data: each frame's payload size, and whether it was a placed one.
        List<String> data = new CopyOnWriteArrayList<>();
        Channel lane = TestWorkers.impl(accepted).amLane();
        lane.eventLoop().submit(() -> lane.pipeline().addAfter("nucx.frameDecoder", "test.rndvData",
                new ChannelInboundHandlerAdapter() {
                    @Override
                    public void channelRead(ChannelHandlerContext ctx, Object msg) {
                        if (msg instanceof AmFrame f && f.amId() == AmIds.RNDV_DATA) {
                            data.add(f.payload().readableBytes()
                                    + ((f.flags() & AmFrame.FLAG_PLACED) != 0 ? " placed" : ""));
                        }
                        ctx.fireChannelRead(msg);
                    }
                })).get(10, TimeUnit.SECONDS);
        ByteBuf buffer = PooledByteBufAllocator.DEFAULT.directBuffer(4 << 20, 4 << 20);
        try {
            sendEachInto(ep, b, buffer, 200, 3 << 20, 100_000, 1 << 20);
        } finally {
            buffer.release();
        }
        if (place.equals("y")) {
            // Frames up to the tcp lane's largest placed frame (256 KiB with the header, at the default segment
            // size), as few as fit, of even size: 13 for 3 MiB, 1 for 100,000 bytes, 5 for 1 MiB. Those over a
            // segment are flagged as placed; 100,000 bytes fit one (128 KiB), a frame as any other.
            assertEquals(13 + 1 + 5, data.size(), () -> "placed frames: " + data);
            assertTrue(data.stream().allMatch(d -> d.equals("100000") || d.endsWith(" placed")
                    && Integer.parseInt(d.split(" ")[0]) <= 256 * 1024 - 16), () -> data.toString());
            assertTrue(data.contains("100000"), () -> data.toString());
        } else {
            assertEquals(25 + 1 + 9, data.size(), () -> "128 KiB fragments, none placed: " + data);
            assertTrue(data.stream().noneMatch(d -> d.endsWith("placed")), () -> data.toString());
        }
    }

    /**
     * An endpoint that ends tells its lanes to let go of any receive buffer they are placing into
     * ({@link io.nucx.transport.PayloadPlacement#RELINQUISH}) before it fails the receives that own those buffers
     * ({@code EndpointLifecycle.end}): closed by the user, or failed by the peer while its lanes are open.
     */
    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void anEndingEndpointMakesItsLanesLetGoOfPlacedBuffers(boolean failed) throws Exception {
        Worker a = workers.start("a", "TLS", "tcp", "TCP_IO", "epoll");
        Worker b = workers.start("b", "TLS", "tcp", "TCP_IO", "epoll");
        TestWorkers.wiredUp(a, b);
        Endpoint accepted = b.endpoints().iterator().next();
        List<Object> seen = new CopyOnWriteArrayList<>();
        b.eventLoop().submit(() -> TestWorkers.impl(accepted).amLane().pipeline().addLast(
                new ChannelInboundHandlerAdapter() {
                    @Override
                    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
                        if (evt == PayloadPlacement.RELINQUISH) {
                            seen.add(evt);
                        }
                        ctx.fireUserEventTriggered(evt);
                    }
                })).get(10, TimeUnit.SECONDS);
        if (failed) { // an EP_CHECK for an id the peer never gave out: it answers EP_REMOVED, the endpoint fails
            b.eventLoop().submit(() -> TestWorkers.impl(accepted).amLane().writeAndFlush(WireupMessage.epCheck(
                    ErrorMode.PEER, accepted.endpointId(), 999_999).toFrame(
                    TestWorkers.impl(accepted).amLane().alloc()))).get(10, TimeUnit.SECONDS);
            assertTrue(accepted.errorFuture().await(30, TimeUnit.SECONDS));
        } else {
            assertTrue(accepted.close().await(30, TimeUnit.SECONDS));
        }
        assertTrue(accepted.closeFuture().await(30, TimeUnit.SECONDS));
        assertEquals(List.of(PayloadPlacement.RELINQUISH), seen, "RELINQUISH, once");
    }

    /**
     * A single-frame message matched when its header came (its payload being read into the receive's buffer) whose
     * payload never arrives: when the endpoint ends, the receive fails saying so, and the slice of its buffer is let
     * go (the leak detector would report it otherwise).
     */
    @Test
    void aReceiveMatchedByAHeaderWhosePayloadNeverCameFailsWhenTheEndpointEnds() throws Exception {
        Worker a = workers.start("a", "TLS", "tcp", "TCP_IO", "epoll");
        Worker b = workers.start("b", "TLS", "tcp", "TCP_IO", "epoll");
        Endpoint ep = TestWorkers.wiredUp(a, b);
        Endpoint accepted = b.endpoints().iterator().next();
        ByteBuf buffer = PooledByteBufAllocator.DEFAULT.directBuffer(100_000, 100_000);
        try {
            var received = b.eventLoop().submit(() -> b.tagRecv(9, -1L, buffer)).get(10, TimeUnit.SECONDS);
            // An EAGER_ONLY of 50,000 bytes, of which only 10,000 are sent, raw on a's lane: its header and 1,000
            // bytes first (the receiver matches the message and copies those into the buffer), then 9,000 more (read
            // by the socket straight into the buffer: what placedBytes counts).
            Channel lane = TestWorkers.impl(ep).amLane();
            ByteBuf head = Unpooled.buffer();
            head.writeByte(AmIds.EAGER_ONLY).writeByte(0).writeShortLE(8).writeIntLE(50_000).writeLongLE(9)
                    .writeZero(1_000);
            lane.eventLoop().submit(() -> lane.pipeline().firstContext().writeAndFlush(head))
                    .get(10, TimeUnit.SECONDS);
            AmFrameDecoder decoder = TestWorkers.impl(accepted).amLane().pipeline().get(AmFrameDecoder.class);
            Thread.sleep(200);
            lane.eventLoop().submit(() -> lane.pipeline().firstContext().writeAndFlush(
                    Unpooled.buffer(9_000).writeZero(9_000))).get(10, TimeUnit.SECONDS);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (b.eventLoop().submit(decoder::placedBytes).get(10, TimeUnit.SECONDS) == 0) {
                assertTrue(System.nanoTime() < deadline, "the payload was never placed");
                Thread.sleep(5);
            }
            assertTrue(accepted.close().await(30, TimeUnit.SECONDS));
            assertTrue(received.await(30, TimeUnit.SECONDS));
            Throwable cause = received.cause();
            assertInstanceOf(IOException.class, cause);
            assertTrue(cause.getMessage().contains("before the message of tag 9 had arrived"), cause::toString);
        } finally {
            buffer.release();
        }
    }

    /**
     * A handler that overrides {@link TagReceive.Handler#receivedInto} is told where each message lies in its buffer
     * and gets no slice: short messages over shm come straight from the ring, larger ones over shm and tcp as above.
     */
    @ParameterizedTest
    @ValueSource(strings = {"shm", "tcp"})
    void aHandlerTakingMessagesInPlaceIsToldWhereTheyLie(String tls) throws Exception {
        Worker a = workers.start("a", "TLS", tls, "TCP_IO", "epoll");
        Worker b = workers.start("b", "TLS", tls, "TCP_IO", "epoll");
        Endpoint ep = TestWorkers.wiredUp(a, b);
        ByteBuf buffer = PooledByteBufAllocator.DEFAULT.directBuffer(1 << 20, 1 << 20);
        BlockingQueue<long[]> got = new LinkedBlockingQueue<>();
        TagReceive receive = TagReceive.reusable(0, 0, buffer, new TagReceive.Handler() {
            @Override
            public void received(long tag, ByteBuf data) {
                data.release();
                got.add(new long[] {-1});
            }

            @Override
            public void receivedInto(long tag, ByteBuf into, int index, int length) {
                got.add(new long[] {tag, index, length, into.writerIndex()});
            }

            @Override
            public void failed(Throwable cause) {
                got.add(new long[] {-2});
            }
        });
        try {
            int[] sizes = {8, 1000, 200_000, 0};
            int at = 0;
            for (int i = 0; i < sizes.length; i++) {
                b.eventLoop().submit(() -> b.tagRecv(receive)).get(10, TimeUnit.SECONDS);
                assertTrue(ep.tagSend(50 + i, pattern(i, sizes[i])).await(30, TimeUnit.SECONDS));
                long[] g = got.poll(30, TimeUnit.SECONDS);
                assertNotNull(g, "message " + i + " of " + sizes[i] + " bytes did not arrive");
                assertEquals(List.of(50L + i, (long) at, (long) sizes[i], (long) at + sizes[i]),
                        Arrays.stream(g).boxed().toList(), "tag, index, length, writer index");
                assertPattern(i, sizes[i], buffer.slice(at, sizes[i]));
                at += sizes[i]; // not cleared: each message goes after the last
            }
        } finally {
            buffer.release();
        }
    }

    @Test
    void aMessageLongerThanTheRoomLeftFailsTheReceiveAndTheEndpointGoesOn() throws Exception {
        Worker a = workers.start("a", "TLS", "tcp");
        Worker b = workers.start("b", "TLS", "tcp");
        Endpoint ep = TestWorkers.wiredUp(a, b);
        ByteBuf buffer = PooledByteBufAllocator.DEFAULT.directBuffer(100, 100);
        BlockingQueue<Got> got = new LinkedBlockingQueue<>();
        TagReceive receive = into(buffer, got);
        try {
            for (int size : new int[] {1000, 200_000}) {
                b.eventLoop().submit(() -> b.tagRecv(receive)).get(10, TimeUnit.SECONDS);
                ep.tagSend(7, pattern(size, size));
                Got g = got.poll(30, TimeUnit.SECONDS);
                assertNotNull(g, "no word on the " + size + "-byte message");
                assertInstanceOf(MessageTruncatedException.class, g.failure());
                assertEquals(0, buffer.writerIndex(), "nothing of it was kept");
            }
            b.eventLoop().submit(() -> b.tagRecv(receive)).get(10, TimeUnit.SECONDS);
            assertTrue(ep.tagSend(8, pattern(8, 100)).await(30, TimeUnit.SECONDS));
            Got g = got.poll(30, TimeUnit.SECONDS);
            assertNotNull(g, "the next message that fits did not arrive");
            try {
                assertPattern(8, 100, g.data());
            } finally {
                g.data().release();
            }
        } finally {
            buffer.release();
        }
    }
}
