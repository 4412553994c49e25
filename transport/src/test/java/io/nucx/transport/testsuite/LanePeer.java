package io.nucx.transport.testsuite;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.util.ReferenceCountUtil;
import io.nucx.transport.AmFrame;
import io.nucx.transport.Iface;
import io.nucx.transport.IfaceParams;
import io.nucx.transport.NucxConfig;
import io.nucx.transport.Transport;
import io.nucx.transport.Transports;
import io.nucx.transport.IoEngine;
import io.nucx.transport.testing.LeakRecorder;

import java.util.HexFormat;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The other process of {@link LaneConformanceTest}'s cross-process cases: opens an iface of transport {@code args[0]}
 * on engine {@code args[1]} (configuration from {@code nucx.*} properties), prints {@code ADDRESS <device> <iface>},
 * and serves each lane the test connects in mode {@code args[2]}:
 * <ul>
 *   <li>{@code sink}: reads {@link Frames#numbered} frames, checks order and content, prints {@code OK <n>} after
 *       {@code args[3]} of them ({@code BAD ...} on a mismatch);</li>
 *   <li>{@code slow}: as sink, sleeping 2 ms on its loop every 64 frames, so a writer outruns it;</li>
 *   <li>{@code stall}: never reads;</li>
 *   <li>{@code source}: writes numbered frames to the test as fast as the lane stays writable, until killed.</li>
 * </ul>
 * Exits when its stdin closes, with 3 if Netty's leak detector reported a leak.
 */
public final class LanePeer {

    public static void main(String[] args) throws Exception {
        LeakRecorder.install();
        Transport transport = Transports.all().stream().filter(t -> t.name().equals(args[0])).findFirst()
                .orElseThrow();
        IoEngine engine = IoEngine.valueOf(args[1]);
        String mode = args[2];
        long expected = Long.parseLong(args[3]);
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, LaneConformanceTest.factory(args[0], engine));
        NucxConfig config = NucxConfig.fromEnvironment();
        Iface iface = transport.openIface(new IfaceParams(group.next(), transport.defaultDevice(config),
                () -> new Serve(mode, expected), config));
        System.out.println("ADDRESS " + HexFormat.of().formatHex(iface.deviceAddress()) + " "
                + HexFormat.of().formatHex(iface.ifaceAddress()));
        System.out.flush();
        while (System.in.read() >= 0) {
            // until the test closes our stdin
        }
        iface.close().sync();
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        System.exit(LeakRecorder.collect().isEmpty() ? 0 : 3);
    }

    private static final class Serve extends ChannelInboundHandlerAdapter {
        private final String mode;
        private final long expected;
        private long next;

        Serve(String mode, long expected) {
            this.mode = mode;
            this.expected = expected;
        }

        @Override
        public void handlerAdded(ChannelHandlerContext ctx) {
            if (mode.equals("stall")) {
                ctx.channel().config().setAutoRead(false);
            }
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            if (mode.equals("source")) {
                ctx.channel().eventLoop().execute(() -> pour(ctx));
            }
            ctx.fireChannelActive();
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            if (mode.equals("source")) {
                pour(ctx);
            }
        }

        /** Writes numbered frames while the lane is writable: a source as fast as the reader lets it be. */
        private void pour(ChannelHandlerContext ctx) {
            while (ctx.channel().isActive() && ctx.channel().isWritable()) {
                ctx.write(Frames.numbered(next++), ctx.voidPromise());
                if (next % 64 == 0) {
                    ctx.flush();
                }
            }
            ctx.flush();
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            try {
                String bad = Frames.checkNumbered((AmFrame) msg, next);
                if (bad != null) {
                    System.out.println("BAD " + bad);
                    System.out.flush();
                    ctx.close();
                    return;
                }
                next++;
                if (mode.equals("slow") && next % 64 == 0) {
                    LockSupport.parkNanos(2_000_000); // the slowness this mode simulates
                }
                if (next == expected) {
                    System.out.println("OK " + next);
                    System.out.flush();
                }
            } finally {
                ReferenceCountUtil.release(msg);
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            if (!mode.equals("source")) {
                System.out.println("BAD " + cause);
                System.out.flush();
            }
            ctx.close();
        }
    }
}
