package io.nucx.wireup;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelPromise;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import io.netty.handler.codec.LengthFieldPrepender;
import io.netty.handler.codec.string.StringDecoder;
import io.netty.handler.codec.string.StringEncoder;
import io.netty.util.AttributeKey;
import io.netty.util.CharsetUtil;
import io.nucx.Endpoint;
import io.nucx.NucxChannel;
import io.nucx.NucxEventLoopGroup;
import io.nucx.NucxServerChannel;
import io.nucx.protocol.ProtocolCodec;
import io.nucx.protocol.stream.StreamCodec;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The channel pair under Netty's own bootstraps, in one process (the lanes are then self; other processes and
 * transports are the integration tests'): an ordinary length-field string echo with only group and channel changed;
 * parent, options and attributes as on socket channels; half-closure; a reader that does not read makes the writer
 * unwritable; connecting where no nucx listener is fails naming the address.
 */
@Timeout(120)
class NucxChannelTest {

    private static final AttributeKey<String> NAME = AttributeKey.valueOf("name");

    private EventLoopGroup boss;
    private EventLoopGroup workers;
    private Channel server;

    @BeforeEach
    void groups() {
        boss = new NucxEventLoopGroup(1);
        workers = new NucxEventLoopGroup(2);
    }

    @AfterEach
    void shutdown() throws Exception {
        if (server != null) {
            server.close().sync();
        }
        workers.shutdownGracefully(0, 5, TimeUnit.SECONDS).sync();
        boss.shutdownGracefully(0, 5, TimeUnit.SECONDS).sync();
    }

    private static void framing(Channel ch) {
        ch.pipeline().addLast(new LengthFieldBasedFrameDecoder(1 << 20, 0, 4, 0, 4), new LengthFieldPrepender(4),
                new StringDecoder(CharsetUtil.UTF_8), new StringEncoder(CharsetUtil.UTF_8));
    }

    @Test
    void aLengthFieldEchoRunsWithOnlyGroupAndChannelChanged() throws Exception {
        AtomicReference<Channel> child = new AtomicReference<>();
        server = new ServerBootstrap().group(boss, workers).channel(NucxServerChannel.class)
                .childOption(ChannelOption.ALLOW_HALF_CLOSURE, true).childAttr(NAME, "child")
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        child.set(ch);
                        framing(ch);
                        ch.pipeline().addLast(new SimpleChannelInboundHandler<String>() {
                            @Override
                            protected void channelRead0(ChannelHandlerContext ctx, String msg) {
                                ctx.writeAndFlush("echo:" + msg);
                            }
                        });
                    }
                }).bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
        InetSocketAddress address = (InetSocketAddress) server.localAddress();
        assertTrue(address.getPort() > 0, "bound port " + address);
        BlockingQueue<String> replies = new LinkedBlockingQueue<>();
        Channel client = new Bootstrap().group(workers).channel(NucxChannel.class).attr(NAME, "client")
                .handler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        framing(ch);
                        ch.pipeline().addLast(new SimpleChannelInboundHandler<String>() {
                            @Override
                            protected void channelRead0(ChannelHandlerContext ctx, String msg) {
                                replies.add(msg);
                            }
                        });
                    }
                }).connect("127.0.0.1", address.getPort()).sync().channel();
        StringBuilder big = new StringBuilder();
        while (big.length() < 600_000) {
            big.append("0123456789");
        }
        // ("" is not among them: Netty's StringEncoder writes nothing for it, on any channel)
        String[] sent = {"hello", big.toString(), "after the large one", "x"};
        for (String s : sent) {
            client.write(s);
        }
        client.flush();
        for (String s : sent) {
            String r = replies.poll(30, TimeUnit.SECONDS);
            assertNotNull(r, () -> "no echo of a " + s.length() + "-char message; client: " + state(client)
                    + "; server's child: " + state(child.get()));
            assertEquals("echo:" + s, r);
        }
        Channel c = child.get();
        assertInstanceOf(NucxChannel.class, c);
        assertSame(server, c.parent(), "the accepted channel's parent");
        assertEquals("child", c.attr(NAME).get());
        assertEquals("client", client.attr(NAME).get());
        assertTrue(((SocketChannel) c).config().isAllowHalfClosure(), "childOption reached the child");
        assertEquals(address, ((SocketChannel) c).localAddress());
        assertEquals(address, ((SocketChannel) client).remoteAddress());
        assertTrue(c.isActive() && client.isActive());
        client.close().sync();
        assertTrue(c.closeFuture().await(30, TimeUnit.SECONDS), () -> "the peer's close did not close the child: "
                + state(c) + "; client: " + state(client) + "; lifecycle " + lifecycle(c));
    }

    @Test
    void halfClosureDeliversEveryByteThenTheEndAndTheOtherWayStaysOpen() throws Exception {
        server = new ServerBootstrap().group(boss, workers).channel(NucxServerChannel.class)
                .childOption(ChannelOption.ALLOW_HALF_CLOSURE, true)
                .childHandler(new ChannelInboundHandlerAdapter() {
                    long bytes;

                    @Override
                    public void channelRead(ChannelHandlerContext ctx, Object msg) {
                        bytes += ((ByteBuf) msg).readableBytes();
                        ((ByteBuf) msg).release();
                    }

                    @Override
                    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
                        if (evt instanceof ChannelInputShutdownEvent) {
                            // The input ended: answer how much came, then close.
                            ctx.writeAndFlush(Unpooled.copiedBuffer("got " + bytes, CharsetUtil.UTF_8))
                                    .addListener(f -> ctx.close());
                        }
                    }
                }).bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
        BlockingQueue<String> replies = new LinkedBlockingQueue<>();
        CountDownLatch closed = new CountDownLatch(1);
        SocketChannel client = (SocketChannel) new Bootstrap().group(workers).channel(NucxChannel.class)
                .handler(new ChannelInboundHandlerAdapter() {
                    @Override
                    public void channelRead(ChannelHandlerContext ctx, Object msg) {
                        replies.add(((ByteBuf) msg).toString(CharsetUtil.UTF_8));
                        ((ByteBuf) msg).release();
                    }

                    @Override
                    public void channelInactive(ChannelHandlerContext ctx) {
                        closed.countDown();
                    }
                }).connect(server.localAddress()).sync().channel();
        ChannelFuture last = null;
        for (int i = 0; i < 10; i++) {
            last = client.writeAndFlush(Unpooled.wrappedBuffer(new byte[500_000]));
        }
        // As on a socket, shutdownOutput fails writes not yet taken: wait for the last one first.
        last.sync();
        client.shutdownOutput().sync();
        assertTrue(client.isOutputShutdown());
        assertEquals("got 5000000", replies.poll(30, TimeUnit.SECONDS));
        assertTrue(closed.await(30, TimeUnit.SECONDS), "the server's close did not reach the client");
    }

    /**
     * A half-closing child that answers how many bytes came before the end ({@code "end after N"}), or that the
     * channel closed without an end ({@code "inactive after N"}); {@code child} gets the channel.
     */
    private Channel endCounter(boolean autoRead, BlockingQueue<String> outcome, AtomicReference<Channel> child,
            BlockingQueue<Integer> sizes) throws InterruptedException {
        return new ServerBootstrap().group(boss, workers).channel(NucxServerChannel.class)
                .childOption(ChannelOption.ALLOW_HALF_CLOSURE, true)
                .childOption(ChannelOption.AUTO_READ, autoRead)
                .childHandler(new ChannelInboundHandlerAdapter() {
                    long bytes;
                    boolean ended;

                    @Override
                    public void channelActive(ChannelHandlerContext ctx) {
                        child.set(ctx.channel());
                    }

                    @Override
                    public void channelRead(ChannelHandlerContext ctx, Object msg) {
                        int n = ((ByteBuf) msg).readableBytes();
                        bytes += n;
                        sizes.add(n);
                        ((ByteBuf) msg).release();
                    }

                    @Override
                    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
                        if (evt instanceof ChannelInputShutdownEvent) {
                            ended = true;
                            outcome.add("end after " + bytes);
                        }
                    }

                    @Override
                    public void channelInactive(ChannelHandlerContext ctx) {
                        if (!ended) {
                            outcome.add("inactive after " + bytes);
                        }
                    }
                }).bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
    }

    private SocketChannel plainClient() throws InterruptedException {
        return (SocketChannel) new Bootstrap().group(workers).channel(NucxChannel.class)
                .handler(new ChannelInboundHandlerAdapter()).connect(server.localAddress()).sync().channel();
    }

    private static Channel awaitChild(AtomicReference<Channel> child) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (child.get() == null) {
            assertTrue(System.nanoTime() < deadline, "no child");
            Thread.sleep(5);
        }
        return child.get();
    }

    /**
     * Small writes go to the stream gathered, after their promises completed: a listener of one that shuts the output
     * down or closes the channel must not send the end ahead of them (it did: the gathered bytes were then refused
     * behind the end, lost while their writes had succeeded).
     */
    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void aWriteWhoseListenerEndsTheStreamStillArrivesBeforeTheEnd(boolean close) throws Exception {
        BlockingQueue<String> outcome = new LinkedBlockingQueue<>();
        server = endCounter(true, outcome, new AtomicReference<>(), new LinkedBlockingQueue<>());
        SocketChannel client = plainClient();
        client.eventLoop().submit(() -> {
            ChannelPromise last = client.newPromise();
            last.addListener(f -> {
                if (close) {
                    client.close();
                } else {
                    client.shutdownOutput();
                }
            });
            client.write(Unpooled.wrappedBuffer(new byte[100]));
            client.writeAndFlush(Unpooled.wrappedBuffer(new byte[200]), last);
        }).sync();
        assertEquals("end after 300", outcome.poll(30, TimeUnit.SECONDS));
    }

    /**
     * A reader with auto-read off that has read every byte, all credited back, and not yet the end: its peer's close
     * waits for the end to be read (STREAM_FIN_ACK), so the reader still finds it, as a socket's reader finds the FIN
     * after its peer closed (the peer's endpoint went at once, and the channel closed with the end unread).
     */
    @Test
    void theEndReachesAReaderThatReadsOnlyAfterThePeerClosed() throws Exception {
        BlockingQueue<String> outcome = new LinkedBlockingQueue<>();
        AtomicReference<Channel> child = new AtomicReference<>();
        BlockingQueue<Integer> sizes = new LinkedBlockingQueue<>();
        server = endCounter(false, outcome, child, sizes);
        SocketChannel client = plainClient();
        int quarter = StreamCodec.WINDOW / 4; // delivered at once, it is credited at once
        client.writeAndFlush(Unpooled.wrappedBuffer(new byte[quarter])).sync();
        awaitChild(child).read();
        long got = 0;
        while (got < quarter) {
            Integer n = sizes.poll(30, TimeUnit.SECONDS);
            assertNotNull(n, "stuck at " + got + " of " + quarter);
            got += n;
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        AtomicLong credit = new AtomicLong();
        StreamCodec clientStream = ((NucxChannel) client).endpoint().pipeline().get(StreamCodec.class);
        while (credit.get() < StreamCodec.WINDOW) {
            assertTrue(System.nanoTime() < deadline, () -> "the credit did not come back: " + credit);
            client.eventLoop().submit(() -> credit.set(clientStream.credit())).sync();
            Thread.sleep(5);
        }
        client.shutdownOutput().sync();
        client.close().sync();
        // The end arrives and waits for a read(); give the peer's endpoint time to go if it does not wait for that.
        assertNull(outcome.poll(1, TimeUnit.SECONDS), "the reader did not read, yet");
        child.get().read();
        assertEquals("end after " + quarter, outcome.poll(30, TimeUnit.SECONDS));
        assertTrue(child.get().closeFuture().await(30, TimeUnit.SECONDS), "the peer's close did not follow");
    }

    /**
     * The common close: one side closes, the other (half-closure off, Netty's default) closes as it sees the end. Both
     * endpoints end cleanly and at once: each side's end is acknowledged though nobody reads it any more (a closed
     * channel's endpoint reads by itself), and a goodbye that crosses a close still waiting for it is a close, not a
     * reset (the answering side's endpoint failed "the peer removed its endpoint", or waited out its bound).
     */
    @Test
    void aCloseAnsweredByThePeersCloseEndsBothEndpointsCleanly() throws Exception {
        AtomicReference<Channel> child = new AtomicReference<>();
        server = new ServerBootstrap().group(boss, workers).channel(NucxServerChannel.class)
                .childHandler(new ChannelInboundHandlerAdapter() {
                    @Override
                    public void channelActive(ChannelHandlerContext ctx) {
                        child.set(ctx.channel());
                    }
                }).bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
        SocketChannel client = plainClient();
        Channel c = awaitChild(child);
        Endpoint clientEndpoint = ((NucxChannel) client).endpoint();
        Endpoint childEndpoint = ((NucxChannel) c).endpoint();
        long start = System.nanoTime();
        client.close().sync();
        for (Endpoint ep : List.of(clientEndpoint, childEndpoint)) {
            assertTrue(ep.closeFuture().await(30, TimeUnit.SECONDS), () -> ep + " did not close");
            assertTrue(ep.errorFuture().await(5, TimeUnit.SECONDS) && ep.errorFuture().isSuccess(),
                    () -> ep + " failed: " + ep.errorFuture().cause());
        }
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        // NUCX_KEEPALIVE_TIMEOUT (5 s here) bounds a close's wait: a close that waited it out took that long
        assertTrue(ms < 4_000, () -> "the closes took " + ms + " ms");
        assertFalse(c.isOpen());
    }

    /** A shut input drops what comes, as SHUT_RD does, and the writer goes on: its writes beyond a window complete. */
    @Test
    void aShutInputDropsWhatComesAndTheWriterGoesOn() throws Exception {
        BlockingQueue<String> outcome = new LinkedBlockingQueue<>();
        AtomicReference<Channel> child = new AtomicReference<>();
        BlockingQueue<Integer> sizes = new LinkedBlockingQueue<>();
        server = endCounter(false, outcome, child, sizes);
        SocketChannel client = plainClient();
        ((SocketChannel) awaitChild(child)).shutdownInput().sync();
        ChannelFuture last = null;
        for (int i = 0; i < 3 * StreamCodec.WINDOW / (256 * 1024); i++) {
            last = client.writeAndFlush(Unpooled.wrappedBuffer(new byte[256 * 1024]));
        }
        assertTrue(last.await(30, TimeUnit.SECONDS) && last.isSuccess(), () -> "three windows to a shut input: "
                + state(client) + "; " + state(child.get()));
        assertTrue(sizes.isEmpty(), "delivered after shutdownInput: " + sizes);
        client.close().sync();
        assertTrue(child.get().closeFuture().await(30, TimeUnit.SECONDS), "the peer's close did not follow");
    }

    @Test
    void aReaderThatDoesNotReadMakesTheWriterUnwritable() throws Exception {
        AtomicReference<Channel> child = new AtomicReference<>();
        BlockingQueue<Integer> sizes = new LinkedBlockingQueue<>();
        server = new ServerBootstrap().group(boss, workers).channel(NucxServerChannel.class)
                .childOption(ChannelOption.AUTO_READ, false)
                .childHandler(new ChannelInboundHandlerAdapter() {
                    @Override
                    public void channelActive(ChannelHandlerContext ctx) {
                        child.set(ctx.channel());
                    }

                    @Override
                    public void channelRead(ChannelHandlerContext ctx, Object msg) {
                        sizes.add(((ByteBuf) msg).readableBytes());
                        ((ByteBuf) msg).release();
                    }
                }).bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
        Channel client = new Bootstrap().group(workers).channel(NucxChannel.class)
                .handler(new ChannelInboundHandlerAdapter()).connect(server.localAddress()).sync().channel();
        int write = 64 * 1024;
        int written = 3 * StreamCodec.WINDOW / write;
        for (int i = 0; i < written; i++) {
            client.write(Unpooled.wrappedBuffer(new byte[write]));
        }
        client.flush();
        // The stream takes a window; the rest stays in the writer's outbound buffer, which is then past its high
        // water mark: unwritable until the reader reads.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (client.isWritable() || client.unsafe().outboundBuffer().totalPendingWriteBytes()
                > (long) written * write - StreamCodec.WINDOW / 2) { // + entries' overhead
            assertTrue(System.nanoTime() < deadline, () -> "the stream did not take a window, or the writer stayed "
                    + "writable: " + client.isWritable() + "; pending " + client.unsafe().outboundBuffer()
                    .totalPendingWriteBytes() + "; " + describe(((NucxChannel) client).endpoint()));
            Thread.sleep(5);
        }
        assertTrue(sizes.isEmpty(), "delivered without a read()");
        child.get().config().setAutoRead(true);
        long total = (long) written * write;
        long got = 0;
        while (got < total) {
            Integer n = sizes.poll(30, TimeUnit.SECONDS);
            assertNotNull(n, "stuck at " + got + " of " + total);
            got += n;
        }
        assertEquals(total, got);
        assertTrue(client.isWritable());
    }

    /** A channel pair's side as seen on its loop: the channel, its endpoint and every codec's requests. */
    private static String state(Channel ch) {
        if (!(ch instanceof NucxChannel nc) || nc.endpoint() == null) {
            return String.valueOf(ch);
        }
        Endpoint ep = nc.endpoint();
        try {
            return ep.eventLoop().submit(() -> {
                List<String> out = new ArrayList<>();
                ep.pipeline().forEach(e -> {
                    if (e.getValue() instanceof ProtocolCodec c) {
                        c.describeRequests(out);
                    }
                });
                return ch + " active " + ch.isActive() + " autoRead " + ch.config().isAutoRead() + "; " + ep
                        + " active " + ep.isActive() + " autoRead " + ep.config().isAutoRead() + " " + out;
            }).get(5, TimeUnit.SECONDS);
        } catch (Exception e) {
            return e.toString();
        }
    }

    /** The child's endpoint's lifecycle state and lanes, for a close that did not come. */
    private static String lifecycle(Channel ch) {
        if (!(ch instanceof NucxChannel nc) || nc.endpoint() == null) {
            return "-";
        }
        EndpointChannel ep = TestWorkers.impl(nc.endpoint());
        try {
            return ep.eventLoop().submit(() -> ep.lifecycle().state() + ", lanes " + ep.lanes().liveChannels())
                    .get(5, TimeUnit.SECONDS);
        } catch (Exception e) {
            return e.toString();
        }
    }

    private static String describe(Endpoint ep) {
        try {
            return ep.eventLoop().submit(() -> {
                StreamCodec c = ep.pipeline().get(StreamCodec.class);
                return ep + " writable " + ep.isWritable() + " lanes " + TestWorkers.impl(ep).lanes().isWritable()
                        + " credit " + c.credit() + " waiting " + c.waitingWrites();
            }).get();
        } catch (Exception e) {
            return e.toString();
        }
    }

    @Test
    void connectingWhereNoListenerIsFailsNamingTheAddress() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        ChannelFuture f = new Bootstrap().group(workers).channel(NucxChannel.class)
                .handler(new ChannelInboundHandlerAdapter()).connect("127.0.0.1", port);
        assertTrue(f.await(30, TimeUnit.SECONDS));
        assertInstanceOf(ConnectException.class, f.cause());
        assertTrue(f.cause().getMessage().contains("127.0.0.1:" + port), f.cause().getMessage());
        assertFalse(f.channel().isOpen());
    }

    @Test
    void aTcpServerThatIsNotNucxIsNamedAsSuch() throws Exception {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Thread t = new Thread(() -> {
                try (var c = s.accept()) {
                    c.getOutputStream().write(new byte[] {0, 0, 0, 8, 'H', 'T', 'T', 'P', '/', '1', '.', '1'});
                    c.getInputStream().read();
                } catch (Exception ignored) {
                    // the client closes
                }
            });
            t.start();
            ChannelFuture f = new Bootstrap().group(workers).channel(NucxChannel.class)
                    .handler(new ChannelInboundHandlerAdapter()).connect(s.getLocalSocketAddress());
            assertTrue(f.await(30, TimeUnit.SECONDS));
            assertInstanceOf(ConnectException.class, f.cause());
            assertTrue(f.cause().getMessage().contains("does not speak nucx"), f.cause().getMessage());
            t.join(10_000);
        }
    }
}
