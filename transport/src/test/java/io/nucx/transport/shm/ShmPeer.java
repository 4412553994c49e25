package io.nucx.transport.shm;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.util.ReferenceCountUtil;
import io.nucx.transport.AmFrame;
import io.nucx.transport.Iface;
import io.nucx.transport.IfaceParams;
import io.nucx.transport.NucxConfig;
import io.nucx.transport.testing.LeakRecorder;

import java.util.HexFormat;
import java.util.Map;

/**
 * The reading side of {@link ShmChannelTest}'s cross-process cases, in its own JVM: opens a shm iface, prints
 * {@code ADDRESS <device> <iface>}, and checks that frames arrive numbered 0, 1, 2... with the content
 * {@link ShmChannelTest#payload} gives. Modes: {@code normal}; {@code slow} (sleeps on its loop now and then, so
 * the writer outruns it); {@code stall} (never reads). Prints {@code OK <n>} after n frames, {@code BAD ...} on a
 * mismatch; exits when its stdin closes.
 */
public final class ShmPeer {

    public static void main(String[] args) throws Exception {
        LeakRecorder.install();
        String mode = args[0];
        long expected = Long.parseLong(args[1]);
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1,
                ShmIoHandler.newFactory(NioIoHandler.newFactory(), 50_000));
        NucxConfig config = NucxConfig.of(Map.of());
        Iface iface = new ShmTransport().openIface(new IfaceParams(group.next(), ShmTransport.MEMORY,
                () -> new ChannelInboundHandlerAdapter() {
                    long next;

                    @Override
                    public void channelActive(ChannelHandlerContext ctx) {
                        if (mode.equals("stall")) {
                            ctx.channel().config().setAutoRead(false);
                        }
                        ctx.fireChannelActive();
                    }

                    @Override
                    public void channelRead(ChannelHandlerContext ctx, Object msg) throws Exception {
                        AmFrame f = (AmFrame) msg;
                        try {
                            String bad = ShmChannelTest.check(f, next);
                            if (bad != null) {
                                System.out.println("BAD " + bad);
                                ctx.close();
                                return;
                            }
                            next++;
                            if (mode.equals("slow") && next % 64 == 0) {
                                Thread.sleep(2);
                            }
                            if (next == expected) {
                                System.out.println("OK " + next);
                            }
                        } finally {
                            ReferenceCountUtil.release(f);
                        }
                    }
                }, config));
        System.out.println("ADDRESS " + HexFormat.of().formatHex(iface.deviceAddress()) + " "
                + HexFormat.of().formatHex(iface.ifaceAddress()));
        while (System.in.read() >= 0) {
            // until the test closes our stdin
        }
        iface.close().sync();
        group.shutdownGracefully(0, 1, java.util.concurrent.TimeUnit.SECONDS).sync();
        System.exit(LeakRecorder.collect().isEmpty() ? 0 : 3);
    }
}
