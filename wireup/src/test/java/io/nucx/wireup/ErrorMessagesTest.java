package io.nucx.wireup;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.handler.codec.UnsupportedMessageTypeException;
import io.netty.util.concurrent.BlockingOperationException;
import io.netty.util.concurrent.Future;
import io.nucx.ConnectionResetException;
import io.nucx.Endpoint;
import io.nucx.NucxBootstrap;
import io.nucx.NucxChannel;
import io.nucx.NucxClosedException;
import io.nucx.NucxEventLoopGroup;
import io.nucx.NucxServerChannel;
import io.nucx.Worker;
import io.nucx.protocol.tag.TagMessage;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.net.InetSocketAddress;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every error a user can trigger on endpoints and channels names its cause in the user's terms (issue #14, item 7):
 * writing after close, receiving on a closed worker, writing what an endpoint does not take, a message over the
 * peer's NUCX_MAX_MSG_SIZE, a handler that cannot go on a second endpoint, a blocking start on the worker's own loop.
 */
@Timeout(120)
class ErrorMessagesTest {

    @RegisterExtension
    final TestWorkers workers = new TestWorkers();

    @Test
    void aWriteAfterCloseSaysTheEndpointWasClosed() throws Exception {
        DefaultWorker a = workers.start("a", "TLS", "tcp");
        DefaultWorker b = workers.start("b", "TLS", "tcp");
        Endpoint ep = TestWorkers.connected(a, b).ab();
        ep.close().sync();
        for (ChannelFuture f : new ChannelFuture[] {ep.tagSend(1, Unpooled.buffer(4).writeInt(1)),
            ep.streamSend(Unpooled.buffer(4).writeInt(1)), ep.writeAndFlush(Unpooled.buffer(1).writeByte(1))}) {
            assertTrue(f.await(10, TimeUnit.SECONDS));
            assertInstanceOf(NucxClosedException.class, f.cause());
            assertTrue(f.cause().getMessage().contains("closed by its owner"), f.cause().getMessage());
        }
    }

    /**
     * The peer closes its lane while our writes wait for room in it: the writes fail with the close, and the endpoint
     * says the peer closed the connection, not that it failed with that ClosedChannelException (a consequence of the
     * close, which named the wrong side: an in-process perftest whose server ended reported "the connection failed").
     */
    @Test
    void aPeerThatClosesItsLaneWhileOurWritesWaitIsSaidToHaveClosedIt() throws Exception {
        DefaultWorker a = workers.start("a", "TLS", "self");
        DefaultWorker b = workers.start("b", "TLS", "self");
        TestWorkers.Pair pair = TestWorkers.connected(a, b);
        Endpoint ab = pair.ab();
        EndpointChannel ba = (EndpointChannel) pair.ba();
        Channel aLane = ab.eventLoop().submit(() -> ((EndpointChannel) ab).lanes().am().channel()).get();
        Channel bLane = ba.eventLoop().submit(() -> ba.lanes().am().channel()).get();
        bLane.eventLoop().submit(() -> bLane.config().setAutoRead(false)).sync(); // b's queue fills, then a's waits
        int written = ab.eventLoop().submit(() -> {
            int n = 0;
            while (n < 100_000 && aLane.unsafe().outboundBuffer().totalPendingWriteBytes() == 0) {
                ab.writeAndFlush(new TagMessage(7, Unpooled.buffer(8).writeLong(n++)), ab.voidPromise());
            }
            return n;
        }).get();
        assertTrue(written < 100_000, "a's writes never had to wait for room in b's queue");
        ba.closeLane(0).sync();
        assertTrue(ab.errorFuture().await(10, TimeUnit.SECONDS), "a's endpoint outlived its only lane");
        assertInstanceOf(ConnectionResetException.class, ab.errorFuture().cause());
        String m = ab.errorFuture().cause().getMessage();
        assertTrue(m.contains("the peer closed the self/memory connection"), m);
        assertFalse(m.contains("ClosedChannelException"), m);
    }

    @Test
    void receivesOnAClosedWorkerFailNamingIt() throws Exception {
        DefaultWorker a = workers.start("closing", "TLS", "tcp");
        Future<TagMessage> posted = a.tagRecv(1, -1L);
        a.close().get(10, TimeUnit.SECONDS);
        Future<TagMessage> after = a.tagRecv(2, -1L);
        for (Future<TagMessage> f : List.of(posted, after)) {
            assertTrue(f.await(10, TimeUnit.SECONDS));
            assertInstanceOf(NucxClosedException.class, f.cause());
            assertTrue(f.cause().getMessage().contains("worker closing is closed"), f.cause().getMessage());
        }
    }

    @Test
    void writingWhatAnEndpointDoesNotTakeNamesWhatItTakes() throws Exception {
        DefaultWorker a = workers.start("a", "TLS", "shm");
        DefaultWorker b = workers.start("b", "TLS", "shm");
        ChannelFuture f = a.connect(b.address()).writeAndFlush("a string");
        assertTrue(f.await(10, TimeUnit.SECONDS));
        assertInstanceOf(UnsupportedMessageTypeException.class, f.cause());
        String m = f.cause().getMessage();
        assertTrue(m.contains("String") && m.contains("ByteBuf") && m.contains("TagMessage")
                && m.contains("StreamData") && !m.contains("AmFrame"), m);
    }

    /** The receiver refuses a message over its NUCX_MAX_MSG_SIZE and tells the sender why: the send fails naming it. */
    @ParameterizedTest(name = "over {0}")
    @ValueSource(strings = {"tcp", "shm"})
    void aMessageOverThePeersLimitFailsAtTheSenderNamingTheLimit(String tls) throws Exception {
        DefaultWorker a = workers.start("a", "TLS", tls, "RNDV_THRESH", "64k");
        DefaultWorker b = workers.start("b", "TLS", tls, "MAX_MSG_SIZE", "1m");
        Endpoint ep = TestWorkers.connected(a, b).ab();
        ChannelFuture f = ep.tagSend(1, TestWorkers.directPattern(1, 4 << 20));
        assertTrue(f.await(30, TimeUnit.SECONDS));
        assertInstanceOf(ConnectionResetException.class, f.cause());
        String m = f.cause().getMessage();
        assertTrue(m.contains("NUCX_MAX_MSG_SIZE allows 1048576") && m.contains("4194304"), m);
        assertFalse(m.contains("peer process gone"), m);
    }

    /** A handler instance that is not @Sharable cannot go on a second endpoint: the peer hears Netty's reason. */
    @Test
    void aHandlerThatIsNotSharableFailsTheSecondEndpointWithNettysReason() throws Exception {
        ChannelInboundHandlerAdapter once = new ChannelInboundHandlerAdapter();
        DefaultWorker b = workers.start("b", once, "TLS", "tcp");
        DefaultWorker a1 = workers.start("a1", "TLS", "tcp");
        DefaultWorker a2 = workers.start("a2", "TLS", "tcp");
        TestWorkers.connected(a1, b); // the first takes the handler
        Endpoint second = a2.connect(b.address());
        assertTrue(second.errorFuture().await(30, TimeUnit.SECONDS));
        Throwable why = second.errorFuture().cause();
        assertInstanceOf(ConnectionResetException.class, why);
        assertTrue(why.getMessage().contains("is not a @Sharable handler"), why.getMessage());
    }

    @Test
    void aBlockingStartOnTheWorkersOwnLoopSaysWhyAndTheAsyncStartWorksThere() throws Exception {
        EventLoopGroup group = new NucxEventLoopGroup(1);
        try {
            ExecutionException e = assertThrows(ExecutionException.class, () -> group.next().submit(() ->
                    new NucxBootstrap().group(group).config("TLS", "tcp").start()).get(10, TimeUnit.SECONDS));
            assertInstanceOf(BlockingOperationException.class, e.getCause());
            assertTrue(e.getCause().getMessage().contains("startAsync()"), e.getCause().getMessage());
            Future<Future<Worker>> started = group.next().submit(() -> new NucxBootstrap().group(group)
                    .config("TLS", "tcp").startAsync());
            Worker w = started.get(10, TimeUnit.SECONDS).get(30, TimeUnit.SECONDS);
            w.close().get(10, TimeUnit.SECONDS);
        } finally {
            group.shutdownGracefully(0, 5, TimeUnit.SECONDS).sync();
        }
    }

    @Test
    void aWriteOnAClosedNucxChannelSaysItIsClosed() throws Exception {
        EventLoopGroup group = new NucxEventLoopGroup(1);
        try {
            Channel server = new ServerBootstrap().group(group).channel(NucxServerChannel.class)
                    .childHandler(new ChannelInitializer<>() {
                        @Override
                        protected void initChannel(Channel ch) {
                        }
                    }).bind(new InetSocketAddress("127.0.0.1", 0))
                    .sync().channel();
            Channel client = new Bootstrap().group(group).channel(NucxChannel.class)
                    .handler(new ChannelInboundHandlerAdapter()).connect(server.localAddress()).sync().channel();
            client.close().sync();
            ChannelFuture f = client.writeAndFlush(Unpooled.buffer(1).writeByte(1));
            assertTrue(f.await(10, TimeUnit.SECONDS));
            assertInstanceOf(NucxClosedException.class, f.cause());
            assertTrue(f.cause().getMessage().contains("NucxChannel(") && f.cause().getMessage().contains("closed"),
                    f.cause().getMessage());
            ChannelFuture wrong = new Bootstrap().group(group).channel(NucxChannel.class)
                    .handler(new ChannelInboundHandlerAdapter()).connect(server.localAddress()).sync().channel()
                    .writeAndFlush("a string");
            assertTrue(wrong.await(10, TimeUnit.SECONDS));
            assertTrue(wrong.cause().getMessage().contains("(expected: io.netty.buffer.ByteBuf)"),
                    wrong.cause().getMessage());
            server.close().sync();
        } finally {
            group.shutdownGracefully(0, 5, TimeUnit.SECONDS).sync();
        }
    }
}
