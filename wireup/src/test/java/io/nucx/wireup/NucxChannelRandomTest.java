package io.nucx.wireup;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelPromise;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.channel.socket.ChannelInputShutdownReadComplete;
import io.netty.channel.socket.ChannelOutputShutdownEvent;
import io.netty.channel.socket.ChannelOutputShutdownException;
import io.netty.channel.socket.SocketChannel;
import io.nucx.NucxChannel;
import io.nucx.NucxEventLoopGroup;
import io.nucx.NucxServerChannel;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Netty's channel contract on {@link NucxChannel}, as an app sees it through {@code ServerBootstrap} and
 * {@code Bootstrap} on {@link NucxEventLoopGroup}s, over self, shm and tcp lanes, in randomized runs: both sides
 * write a byte stream of random sizes (heap, pooled and composite buffers; write, writeAndFlush, void promises, random
 * flushes) under low water marks, wait for writability when unwritable, and read with auto-read toggled at random and
 * {@code read()} calls while it is off, with a pass-through handler added and removed at runtime. A run ends either
 * by half-closure on both sides ({@code shutdownOutput}, then close) or by a close of one side at a random point.
 * Checked: the bytes that arrive are the bytes written, in order (all of them with half-closure; with a close, every
 * write whose promise succeeded and none whose promise failed); promises complete exactly once and in write order;
 * events come in order and once (registered, active, inactive, unregistered; no read after the input's end or the
 * close; no read while auto-read is off and no {@code read()} is pending); writability comes back; nothing leaks.
 * Replay one run with {@code -Dtest.channel.seed=<seed>}; run more with {@code -Dtest.channel.runs=<n>}, one
 * transport only with {@code -Dtest.channel.only=<0 self, 1 shm, 2 tcp>}.
 */
@Timeout(400)
class NucxChannelRandomTest {

    private static final String TLS_PROPERTY = "nucx.tls";
    private static final String[] TRANSPORTS = {"self", "shm", "tcp"};
    private static final int RUNS_PER_TRANSPORT = 5;
    /** A case's bound: its 0-7 MiB each way take 0.03-2.7 s here; a loaded machine may take several times that. */
    private static final long CASE_SECONDS = 25;

    @Test
    void randomTrafficKeepsNettysChannelContract() throws Exception {
        String replay = System.getProperty("test.channel.seed");
        List<Long> seeds = new ArrayList<>();
        if (replay != null) {
            seeds.add(Long.decode(replay));
        } else {
            long base = System.nanoTime();
            int runs = Integer.getInteger("test.channel.runs", TRANSPORTS.length * RUNS_PER_TRANSPORT);
            int only = Integer.getInteger("test.channel.only", -1);
            for (int i = 0; seeds.size() < runs; i++) {
                if (only < 0 || Math.floorMod(base + i, (long) TRANSPORTS.length) == only) {
                    seeds.add(base + i); // seed % 3 chooses the transport: consecutive seeds cover all three
                }
            }
        }
        for (long seed : seeds) {
            runCase(seed);
        }
    }

    private static byte expected(long salt, long offset) {
        return (byte) (((offset + salt) * 0x9E3779B97F4A7C15L) >>> 56);
    }

    private void runCase(long seed) throws Exception {
        SplittableRandom rnd = new SplittableRandom(seed);
        String transport = TRANSPORTS[(int) Math.floorMod(seed, (long) TRANSPORTS.length)];
        boolean halfClose = rnd.nextBoolean();
        boolean clientCloses = rnd.nextBoolean();
        int low = 1 + rnd.nextInt(64 * 1024);
        int high = low + 1 + rnd.nextInt(256 * 1024);
        WriteBufferWaterMark marks = new WriteBufferWaterMark(low, high);
        Side client = new Side("client", seed, rnd.split(), halfClose, !halfClose && clientCloses);
        Side server = new Side("server", seed, rnd.split(), halfClose, !halfClose && !clientCloses);
        client.peer = server;
        server.peer = client;
        String what = "seed " + seed + " (replay: -Dtest.channel.seed=" + seed + "), " + transport + ", "
                + (halfClose ? "half-closure" : (clientCloses ? "client" : "server") + " closes at "
                + (clientCloses ? client.closeAt : server.closeAt)) + ", water marks " + low + "/" + high
                + ", client writes " + client.total + ", server writes " + server.total;
        System.out.println("NucxChannelRandomTest: " + what);
        long started = System.nanoTime();
        String before = System.getProperty(TLS_PROPERTY);
        System.setProperty(TLS_PROPERTY, transport);
        EventLoopGroup serverGroup = new NucxEventLoopGroup(1);
        EventLoopGroup clientGroup = new NucxEventLoopGroup(1);
        Channel listener = null;
        try {
            listener = new ServerBootstrap().group(serverGroup).channel(NucxServerChannel.class)
                    .childOption(ChannelOption.ALLOW_HALF_CLOSURE, halfClose)
                    .childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, marks)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            server.install(ch);
                        }
                    }).bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
            ChannelFuture connect = new Bootstrap().group(clientGroup).channel(NucxChannel.class)
                    .option(ChannelOption.ALLOW_HALF_CLOSURE, halfClose)
                    .option(ChannelOption.WRITE_BUFFER_WATER_MARK, marks)
                    .handler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            client.install(ch);
                        }
                    }).connect(listener.localAddress());
            assertTrue(connect.await(CASE_SECONDS, TimeUnit.SECONDS) && connect.isSuccess(),
                    () -> what + ": connect failed: " + connect.cause());
            boolean done = client.unregistered.await(CASE_SECONDS, TimeUnit.SECONDS)
                    & server.unregistered.await(CASE_SECONDS, TimeUnit.SECONDS);
            List<String> problems = new ArrayList<>();
            if (!done) {
                problems.add("the run did not end in " + CASE_SECONDS + " s: " + client.state() + "; "
                        + server.state());
            } else {
                // the last listeners and events run on the loops: let them finish
                client.onLoop(() -> { }).await(CASE_SECONDS, TimeUnit.SECONDS);
                server.onLoop(() -> { }).await(CASE_SECONDS, TimeUnit.SECONDS);
                client.verify(problems);
                server.verify(problems);
            }
            if (!problems.isEmpty()) {
                fail(what + ":\n  " + String.join("\n  ", problems));
            }
        } finally {
            if (listener != null) {
                listener.close().await(CASE_SECONDS, TimeUnit.SECONDS);
            }
            clientGroup.shutdownGracefully(0, 5, TimeUnit.SECONDS).await(CASE_SECONDS, TimeUnit.SECONDS);
            serverGroup.shutdownGracefully(0, 5, TimeUnit.SECONDS).await(CASE_SECONDS, TimeUnit.SECONDS);
            if (before == null) {
                System.clearProperty(TLS_PROPERTY);
            } else {
                System.setProperty(TLS_PROPERTY, before);
            }
        }
        System.out.println("NucxChannelRandomTest: seed " + seed + " passed in "
                + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started) + " ms: " + client.lanes);
    }

    /** One end: its writer, its reader and what it saw. Everything but the latch and verify() runs on its loop. */
    private static final class Side {
        final String name;
        final long salt;
        final SplittableRandom rnd;
        final boolean halfClose;
        /** This side closes once it wrote {@link #closeAt} bytes (close mode), maybe before their promises end. */
        final boolean closer;
        final long closeAt;
        final boolean closeAfterPromises;
        final long total;
        final CountDownLatch unregistered = new CountDownLatch(1);
        Side peer;
        Channel ch;

        final List<String> events = new ArrayList<>();
        final List<String> errors = new ArrayList<>();
        // writing
        long written;
        int nextWrite;
        int nextCompletion;
        long lastSucceededEnd;
        long firstFailedStart = -1;
        int pendingPromises;
        boolean waitingWritable;
        boolean writerDone;
        boolean closeCalled;
        boolean shutdownCalled;
        int unwritableWaits;
        int writabilityEvents;
        ChannelFuture shutdownOutputFuture;
        // reading
        long received;
        boolean readAllowed;
        boolean inBatch;
        /** A read() asked during the current batch: the next batch may come. */
        boolean readAskedInBatch;
        /** Half-closure: shutdownOutput once the last write's promise completed, or at once behind it. */
        final boolean shutdownAfterPromises;
        boolean active;
        boolean inactive;
        boolean inputEnded;
        int readCompletesAfterEnd;
        int taps;
        int reads;
        int autoReadOffFor;
        String lanes;

        Side(String name, long seed, SplittableRandom rnd, boolean halfClose, boolean closer) {
            this.name = name;
            this.salt = seed * 31 + name.hashCode();
            this.rnd = rnd;
            this.halfClose = halfClose;
            this.closer = closer;
            this.total = rnd.nextInt(4) == 0 ? rnd.nextLong(64 * 1024) : rnd.nextLong(7 << 20);
            this.closeAt = closer ? rnd.nextLong(total + 1) : -1;
            this.closeAfterPromises = rnd.nextBoolean();
            this.shutdownAfterPromises = rnd.nextBoolean();
        }

        ChannelFuture onLoop(Runnable r) {
            ChannelPromise p = ch.newPromise();
            ch.eventLoop().execute(() -> {
                r.run();
                p.setSuccess();
            });
            return p;
        }

        void error(String e) {
            if (errors.size() < 20) {
                errors.add(name + ": " + e);
            }
        }

        void install(Channel channel) {
            ch = channel;
            ch.pipeline().addLast("events", new Events());
            ch.pipeline().addLast("check", new Reader());
            ch.closeFuture().addListener(f -> events.add("closeFuture"));
        }

        String state() {
            return name + "{events " + events + ", written " + written + "/" + total + ", promises done "
                    + nextCompletion + "/" + nextWrite + ", waitingWritable " + waitingWritable + " (writable "
                    + (ch != null && ch.isWritable()) + ", pending " + (ch != null && ch.unsafe().outboundBuffer()
                    != null ? ch.unsafe().outboundBuffer().totalPendingWriteBytes() : -1) + "), received "
                    + received + "/" + (peer.total) + ", autoRead " + (ch != null && ch.config().isAutoRead())
                    + ", readAllowed " + readAllowed + ", inputEnded " + inputEnded + ", " + ch + ", errors " + errors
                    + "}";
        }

        // ---------------------------------------------------------------- writing

        private ByteBuf nextBuffer(int n, long from) {
            byte[] bytes = new byte[n];
            for (int i = 0; i < n; i++) {
                bytes[i] = expected(salt, from + i);
            }
            switch (rnd.nextInt(4)) {
                case 0:
                    return Unpooled.wrappedBuffer(bytes);
                case 1: {
                    if (n < 2) {
                        return ch.alloc().buffer(n).writeBytes(bytes);
                    }
                    CompositeByteBuf c = ch.alloc().compositeBuffer();
                    int cut = 1 + rnd.nextInt(n - 1);
                    c.addComponent(true, ch.alloc().buffer(cut).writeBytes(bytes, 0, cut));
                    c.addComponent(true, Unpooled.wrappedBuffer(bytes, cut, n - cut));
                    return c;
                }
                default: {
                    // a slice with bytes around it: only the readable part is the stream's
                    int pad = rnd.nextInt(8);
                    ByteBuf b = ch.alloc().buffer(n + 2 * pad);
                    b.writeZero(pad).writeBytes(bytes).writeZero(pad);
                    return b.readerIndex(pad).writerIndex(pad + n);
                }
            }
        }

        private int nextSize() {
            switch (rnd.nextInt(10)) {
                case 0:
                    return 0;
                case 1, 2, 3:
                    return 1 + rnd.nextInt(64);
                case 4, 5:
                    return 1 + rnd.nextInt(4096);
                case 6, 7:
                    return 1 + rnd.nextInt(40 * 1024);
                case 8:
                    return 32 * 1024 + rnd.nextInt(96 * 1024);
                default:
                    return 128 * 1024 + rnd.nextInt(900 * 1024);
            }
        }

        void pump() {
            waitingWritable = false;
            if (writerDone || !ch.isActive()) {
                return;
            }
            int burst = 1 + rnd.nextInt(40);
            while (written < total && burst-- > 0) {
                if (closer && written >= closeAt) {
                    break;
                }
                if (!ch.isWritable()) {
                    ch.flush();
                    if (!ch.isWritable()) {
                        waitingWritable = true;
                        unwritableWaits++;
                        return; // channelWritabilityChanged calls pump()
                    }
                }
                int n = (int) Math.min(nextSize(), total - written);
                if (closer) {
                    n = (int) Math.min(n, closeAt - written);
                }
                ByteBuf buf = nextBuffer(n, written);
                long start = written;
                written += n;
                boolean last = written == total || closer && written == closeAt;
                int how = last ? 1 : rnd.nextInt(5);
                if (how >= 3) {
                    // void promise: failures go to exceptionCaught; order is checked by the bytes
                    if (how == 3) {
                        ch.write(buf, ch.voidPromise());
                    } else {
                        ch.writeAndFlush(buf, ch.voidPromise());
                    }
                } else {
                    int index = nextWrite++;
                    pendingPromises++;
                    ChannelPromise p = ch.newPromise();
                    long end = written;
                    p.addListener(f -> completed(index, start, end, f.isSuccess(), f.cause()));
                    if (how == 0) {
                        ch.write(buf, p);
                    } else {
                        ch.writeAndFlush(buf, p);
                    }
                }
                if (rnd.nextInt(6) == 0) {
                    ch.flush();
                }
            }
            ch.flush();
            if (written == total || closer && written >= closeAt) {
                writerDone = true;
                finishWriting();
            } else {
                ch.eventLoop().schedule(this::pump, rnd.nextInt(3) == 0 ? rnd.nextInt(300) : 0,
                        TimeUnit.MICROSECONDS);
            }
        }

        private void completed(int index, long start, long end, boolean success, Throwable cause) {
            if (!ch.eventLoop().inEventLoop()) {
                error("write promise " + index + " completed off the channel's loop");
            }
            if (index != nextCompletion) {
                error("write promise " + index + " completed when " + nextCompletion + " was next (out of order)");
            }
            nextCompletion = Math.max(nextCompletion, index + 1);
            pendingPromises--;
            if (success) {
                if (firstFailedStart >= 0) {
                    error("write promise " + index + " [" + start + ", " + end + ") succeeded after one failed");
                }
                lastSucceededEnd = Math.max(lastSucceededEnd, end);
            } else {
                if (halfClose && shutdownAfterPromises) {
                    error("write promise " + index + " [" + start + ", " + end + ") failed: " + cause);
                }
                if (firstFailedStart < 0) {
                    firstFailedStart = start;
                }
            }
            if (closer && writerDone && closeAfterPromises && pendingPromises == 0) {
                close();
            }
            if (halfClose && writerDone && shutdownAfterPromises && pendingPromises == 0
                    && shutdownOutputFuture == null) {
                shutdownOutput();
            }
        }

        private void finishWriting() {
            if (halfClose) {
                if (!shutdownAfterPromises || pendingPromises == 0) {
                    shutdownOutput();
                }
            } else if (closer && (!closeAfterPromises || pendingPromises == 0)) {
                close();
            }
        }

        private void shutdownOutput() {
            shutdownCalled = true;
            shutdownOutputFuture = ((SocketChannel) ch).shutdownOutput();
            shutdownOutputFuture.addListener(f -> {
                if (!f.isSuccess()) {
                    error("shutdownOutput failed: " + f.cause());
                }
                events.add("outputShutdown");
                if (inputEnded) {
                    close();
                }
            });
        }

        private void close() {
            if (!closeCalled) {
                closeCalled = true;
                events.add("close()");
                ch.close();
            }
        }

        // ---------------------------------------------------------------- reading

        /** Random reader behaviour, every 0.2-2 ms while the channel is open. */
        void tick() {
            if (!ch.isOpen()) {
                return;
            }
            boolean autoRead = ch.config().isAutoRead();
            int r = rnd.nextInt(20);
            if (autoRead && r < 3) {
                ch.config().setAutoRead(false);
                if (!inBatch) {
                    readAllowed = false; // no read() is pending, as on a socket channel: nothing may come
                }
                autoReadOffFor = 0;
            } else if (!autoRead && (r < 3 || ++autoReadOffFor > 25)) {
                readAllowed = true;
                ch.config().setAutoRead(true);
            } else if (!autoRead && r < 9) {
                readAllowed = true;
                readAskedInBatch |= inBatch;
                ch.read();
            } else if (r == 9) {
                String tapName = "tap" + taps++;
                ch.pipeline().addBefore("check", tapName, new ChannelDuplexHandler());
                int after = rnd.nextInt(3000);
                ch.eventLoop().schedule(() -> {
                    if (ch.pipeline().get(tapName) != null) {
                        ch.pipeline().remove(tapName);
                    }
                }, after, TimeUnit.MICROSECONDS);
            }
            ch.eventLoop().schedule(this::tick, 200 + rnd.nextInt(1800), TimeUnit.MICROSECONDS);
        }

        private final class Events extends ChannelInboundHandlerAdapter {
            @Override
            public void channelRegistered(ChannelHandlerContext ctx) {
                events.add("registered");
                ctx.fireChannelRegistered();
            }

            @Override
            public void channelActive(ChannelHandlerContext ctx) {
                events.add("active");
                ctx.fireChannelActive();
            }

            @Override
            public void channelInactive(ChannelHandlerContext ctx) {
                events.add("inactive");
                ctx.fireChannelInactive();
            }

            @Override
            public void channelUnregistered(ChannelHandlerContext ctx) {
                events.add("unregistered");
                ctx.fireChannelUnregistered();
                unregistered.countDown();
            }
        }

        private final class Reader extends ChannelInboundHandlerAdapter {
            @Override
            public void channelActive(ChannelHandlerContext ctx) {
                if (active) {
                    error("channelActive twice");
                }
                active = true;
                lanes = String.valueOf(ctx.channel());
                readAllowed = ctx.channel().config().isAutoRead();
                ctx.channel().eventLoop().schedule(Side.this::tick, rnd.nextInt(1000), TimeUnit.MICROSECONDS);
                ctx.channel().eventLoop().execute(Side.this::pump);
            }

            @Override
            public void channelInactive(ChannelHandlerContext ctx) {
                if (!active) {
                    error("channelInactive before channelActive");
                }
                if (inactive) {
                    error("channelInactive twice");
                }
                inactive = true;
            }

            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                ByteBuf buf = (ByteBuf) msg;
                try {
                    reads++;
                    if (!active || inactive) {
                        error("channelRead outside active..inactive (active " + active + ", inactive " + inactive
                                + ")");
                    }
                    if (inputEnded) {
                        error("channelRead after ChannelInputShutdownEvent");
                    }
                    if (!readAllowed && !inBatch) {
                        error("channelRead of " + buf.readableBytes() + " bytes at " + received + " with auto-read"
                                + " off and no read() pending");
                    }
                    inBatch = true;
                    int n = buf.readableBytes();
                    byte[] got = new byte[n];
                    buf.getBytes(buf.readerIndex(), got);
                    for (int i = 0; i < n; i++) {
                        if (got[i] != expected(peer.salt, received + i)) {
                            error("byte " + (received + i) + " is " + got[i] + ", expected "
                                    + expected(peer.salt, received + i) + " (read of " + n + " bytes)");
                            break;
                        }
                    }
                    received += n;
                    if (received > peer.total) {
                        error("received " + received + " bytes, more than the " + peer.total + " written");
                    }
                    int r = rnd.nextInt(40);
                    if (r == 0) {
                        ctx.channel().config().setAutoRead(false); // the rest of this batch may still come
                    } else if (r == 1 && !ctx.channel().config().isAutoRead()) {
                        readAllowed = true;
                        readAskedInBatch = true;
                        ctx.read();
                    }
                } finally {
                    buf.release();
                }
            }

            @Override
            public void channelReadComplete(ChannelHandlerContext ctx) {
                inBatch = false;
                if (inputEnded) {
                    readCompletesAfterEnd++;
                }
                readAllowed = ctx.channel().config().isAutoRead() || readAskedInBatch;
                readAskedInBatch = false;
            }

            @Override
            public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
                if (evt == ChannelInputShutdownEvent.INSTANCE) {
                    events.add("inputShutdown");
                    if (inputEnded) {
                        error("ChannelInputShutdownEvent twice");
                    }
                    if (!halfClose) {
                        error("ChannelInputShutdownEvent without ALLOW_HALF_CLOSURE");
                    }
                    inputEnded = true;
                    if (peer.shutdownAfterPromises && received != peer.total) {
                        error("input ended after " + received + " of the peer's " + peer.total + " bytes");
                    }
                    if (shutdownOutputFuture != null && shutdownOutputFuture.isDone()) {
                        close();
                    }
                } else if (evt == ChannelInputShutdownReadComplete.INSTANCE) {
                    events.add("inputShutdownReadComplete");
                } else if (evt == ChannelOutputShutdownEvent.INSTANCE) {
                    events.add("outputShutdownEvent");
                } else {
                    events.add("event " + evt);
                }
            }

            @Override
            public void channelWritabilityChanged(ChannelHandlerContext ctx) {
                writabilityEvents++;
                if (waitingWritable && ctx.channel().isWritable()) {
                    pump();
                }
            }

            @Override
            public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
                boolean shutDown = halfClose && !shutdownAfterPromises && shutdownCalled
                        && cause instanceof ChannelOutputShutdownException; // a void write behind shutdownOutput
                if (!shutDown && (halfClose || ch.isActive() && !closeCalled && !peer.closeCalled)) {
                    error("exceptionCaught: " + cause);
                } else {
                    events.add("exceptionCaught " + cause.getClass().getSimpleName());
                }
            }
        }

        // ---------------------------------------------------------------- checks

        void verify(List<String> problems) {
            problems.addAll(errors);
            List<String> lifecycle = new ArrayList<>(events);
            lifecycle.removeIf(e -> !List.of("registered", "active", "inactive", "unregistered").contains(e));
            if (!lifecycle.equals(List.of("registered", "active", "inactive", "unregistered"))) {
                problems.add(name + ": lifecycle events " + lifecycle + " (all: " + events + ")");
            }
            if (!ch.closeFuture().isDone()) {
                problems.add(name + ": unregistered, but its closeFuture is not done");
            }
            if (nextCompletion != nextWrite || pendingPromises != 0) {
                problems.add(name + ": " + (nextWrite - nextCompletion) + " of " + nextWrite
                        + " write promises never completed");
            }
            if (halfClose) {
                if (peer.shutdownAfterPromises ? received != peer.total : received < peer.lastSucceededEnd
                        || peer.firstFailedStart >= 0 && received > peer.firstFailedStart) {
                    problems.add(name + ": received " + received + " of the peer's " + peer.total + " bytes; its "
                            + "writes succeeded up to " + peer.lastSucceededEnd + ", failed from "
                            + peer.firstFailedStart);
                }
                if (!inputEnded) {
                    problems.add(name + ": no ChannelInputShutdownEvent (events " + events + ", received " + received
                            + " of " + peer.total + ")");
                }
                if (written != total || shutdownAfterPromises && firstFailedStart >= 0) {
                    problems.add(name + ": wrote " + written + " of " + total + ", a write failed at "
                            + firstFailedStart);
                }
            } else if (peer.closer) {
                // every write of the closer whose promise succeeded arrives; none whose promise failed
                if (received < peer.lastSucceededEnd) {
                    problems.add(name + ": received " + received + " bytes, but the closing peer's writes up to "
                            + peer.lastSucceededEnd + " succeeded");
                }
                if (peer.firstFailedStart >= 0 && received > peer.firstFailedStart) {
                    problems.add(name + ": received " + received + " bytes, but the closing peer's write at "
                            + peer.firstFailedStart + " failed");
                }
            }
        }
    }
}
