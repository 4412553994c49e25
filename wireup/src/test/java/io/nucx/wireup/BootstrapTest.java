package io.nucx.wireup;

import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioIoHandler;
import io.nucx.Endpoint;
import io.nucx.EndpointOption;
import io.nucx.NucxBootstrap;
import io.nucx.Worker;
import io.nucx.protocol.tag.TagMessage;
import io.nucx.transport.NucxConfigException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Starting workers the Netty way: on a user's group, with endpoint handlers, and refusing bad configuration. */
@Timeout(60)
class BootstrapTest {

    @Test
    void workersShareAnExistingEventLoopGroupAndUserHandlersSeeMessages() throws Exception {
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(2, NioIoHandler.newFactory());
        CompletableFuture<String> seen = new CompletableFuture<>();
        List<Worker> workers = new ArrayList<>();
        try {
            Worker server = new NucxBootstrap().group(group).name("server").config("TLS", "tcp")
                    .endpointHandler(new ChannelInitializer<Endpoint>() {
                        @Override
                        protected void initChannel(Endpoint ep) {
                            ep.config().setOption(EndpointOption.PIPELINE_TAG, 7L);
                            ep.config().setOption(EndpointOption.PIPELINE_TAG_MASK, -1L);
                            ep.pipeline().addLast(new SimpleChannelInboundHandler<TagMessage>() {
                                @Override
                                protected void channelRead0(ChannelHandlerContext ctx, TagMessage msg) {
                                    seen.complete(msg.content().toString(StandardCharsets.UTF_8));
                                }
                            });
                        }
                    }).start();
            workers.add(server);
            Worker client = new NucxBootstrap().group(group).name("client").config("TLS", "tcp").start();
            workers.add(client);
            assertTrue(contains(group, server) && contains(group, client), "workers run on the user's loops");
            Endpoint ep = client.connect(server.address());
            ep.config().setOption(EndpointOption.SEND_TAG, 7L);
            ep.writeAndFlush(Unpooled.copiedBuffer("hello pipeline", StandardCharsets.UTF_8)).sync();
            assertEquals("hello pipeline", seen.get(10, TimeUnit.SECONDS));
        } finally {
            for (Worker w : workers) {
                w.close().get(10, TimeUnit.SECONDS);
            }
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
        assertTrue(group.isShutdown());
    }

    private static boolean contains(EventLoopGroup group, Worker w) {
        for (var e : group) {
            if (e == w.eventLoop()) {
                return true;
            }
        }
        return false;
    }

    @Test
    void unknownTransportStopsStartUpNamingTheVariable() {
        NucxConfigException e = assertThrows(NucxConfigException.class,
                () -> new NucxBootstrap().config("TLS", "tcp,bogus").start());
        assertTrue(e.getMessage().contains("bogus") && e.getMessage().contains("TLS"), e.getMessage());
    }

    @Test
    void aMalformedPerformanceProfileStopsStartUpNamingTheFileAndTheFault(@org.junit.jupiter.api.io.TempDir
                                                                           java.nio.file.Path dir) throws Exception {
        java.nio.file.Path file = dir.resolve("profile.txt");
        java.nio.file.Files.writeString(file, "format = nucx-perf-profile 1\nshm/memory.bandwidth = -5\n");
        NucxConfigException e = assertThrows(NucxConfigException.class,
                () -> new NucxBootstrap().config("TLS", "tcp").config("PERF_PROFILE", file.toString()).start());
        assertTrue(e.getMessage().contains("PERF_PROFILE") && e.getMessage().contains(file + " line 2")
                && e.getMessage().contains("shm/memory.bandwidth must be a finite number > 0"), e.getMessage());
    }

    @Test
    void forcedEngineThatDoesNotMatchTheGivenGroupIsRefused() throws Exception {
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        try {
            NucxConfigException e = assertThrows(NucxConfigException.class,
                    () -> new NucxBootstrap().group(group).config("TLS", "tcp").config("TCP_IO", "epoll").start());
            assertTrue(e.getMessage().contains("TCP_IO") && e.getMessage().contains("nio"), e.getMessage());
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }

    @Test
    void manySendersInterleavingMultiFragmentMessagesAreReassembledPerMessage() throws Exception {
        List<Worker> workers = new ArrayList<>();
        try {
            Worker receiver = new NucxBootstrap().name("receiver").config("TLS", "tcp").start();
            workers.add(receiver);
            int senders = 4;
            int perSender = 20;
            int size = 300_000; // five fragments each
            CountDownLatch sent = new CountDownLatch(senders);
            for (int s = 0; s < senders; s++) {
                Worker w = new NucxBootstrap().name("sender" + s).config("TLS", "tcp").start();
                workers.add(w);
                Endpoint ep = w.connect(receiver.address());
                int sender = s;
                new Thread(() -> {
                    for (int i = 0; i < perSender; i++) {
                        ep.tagSend(((long) sender << 32) | i,
                                TestWorkers.pattern(sender * 1000L + i, size));
                    }
                    sent.countDown();
                }).start();
            }
            assertTrue(sent.await(30, TimeUnit.SECONDS));
            int[] next = new int[senders];
            for (int n = 0; n < senders * perSender; n++) {
                TagMessage m = receiver.tagRecv(0, 0).get(30, TimeUnit.SECONDS);
                try {
                    int sender = (int) (m.tag() >>> 32);
                    int i = (int) m.tag();
                    assertEquals(next[sender]++, i, "per-sender order");
                    TestWorkers.assertPattern(sender * 1000L + i, size, m.content());
                } finally {
                    m.release();
                }
            }
        } finally {
            for (Worker w : workers) {
                w.close().get(10, TimeUnit.SECONDS);
            }
        }
    }

    @Test
    void protosThatNameNoProtocolStopStartUpNamingTheSetting() {
        NucxConfigException e = assertThrows(NucxConfigException.class,
                () -> new NucxBootstrap().config("TLS", "self").config("PROTOS", "egr/*,rndv/nope").start());
        assertTrue(e.getMessage().contains("PROTOS") && e.getMessage().contains("rndv/nope"), e.getMessage());
    }

    @Test
    void protosRestrictWhatTheTablesMayChoose() throws Exception {
        List<Worker> workers = new ArrayList<>();
        try {
            Worker a = new NucxBootstrap().name("a").config("TLS", "self").config("PROTOS", "^tag/rndv").start();
            workers.add(a);
            Worker b = new NucxBootstrap().name("b").config("TLS", "self").config("PROTOS", "egr/short").start();
            workers.add(b);
            String noRndv = a.protocolInfo(b.address());
            assertTrue(noRndv.contains("multi-frag eager") && !noRndv.contains("rendezvous"), noRndv);
            String onlyShort = b.protocolInfo(a.address());
            assertTrue(onlyShort.contains("eager short") && !onlyShort.contains("copy-in"), onlyShort);
            // a message no enabled protocol can carry fails its send, saying why
            Endpoint ep = b.connect(a.address());
            var f = ep.tagSend(1, Unpooled.wrappedBuffer(new byte[100_000])).await();
            assertTrue(f.cause() != null && f.cause().getMessage().contains("no protocol sends a 100000-byte"),
                    String.valueOf(f.cause()));
        } finally {
            for (Worker w : workers) {
                w.close().get(10, TimeUnit.SECONDS);
            }
        }
    }
}
