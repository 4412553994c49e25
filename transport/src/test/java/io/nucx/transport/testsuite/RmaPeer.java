package io.nucx.transport.testsuite;

import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoop;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.nucx.transport.Iface;
import io.nucx.transport.IfaceParams;
import io.nucx.transport.NucxConfig;
import io.nucx.transport.Transport;
import io.nucx.transport.Transports;
import io.nucx.transport.rma.MemoryRegistration;
import io.nucx.transport.rma.RemoteKey;
import io.nucx.transport.rma.RmaLane;
import io.nucx.transport.rma.RmaOp;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.HexFormat;
import java.util.concurrent.TimeUnit;

/**
 * The other process of {@link RmaLaneConformanceTest}: opens an iface of the transport named in {@code args[0]},
 * prints its addresses, connects an RMA lane back to the test's iface, exposes {@code args[1]} bytes of native memory
 * filled with {@link Patterns#pattern} seed 1 through it and prints the packed key; then answers, one
 * line each, until EXIT or end of input:
 * <pre>
 * CHECK offset length seed   -> OK | BAD first-wrong-offset      (is that range of our region that pattern?)
 * PUT hexkey offset length seed -> OK | ERR message              (write that pattern into the test's memory)
 * </pre>
 */
public final class RmaPeer {

    private static final HexFormat HEX = HexFormat.of();

    public static void main(String[] args) throws Exception {
        Transport transport = Transports.all().stream().filter(t -> t.name().equals(args[0])).findFirst()
                .orElseThrow();
        long size = Long.parseLong(args[1]);
        MultiThreadIoEventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        EventLoop loop = group.next();
        NucxConfig config = NucxConfig.fromEnvironment();
        try (Arena arena = Arena.ofShared()) {
            Iface iface = loop.submit(() -> transport.openIface(new IfaceParams(loop,
                    transport.defaultDevice(config), ChannelInboundHandlerAdapter::new, config))).get();
            System.out.println("ADDR " + HEX.formatHex(iface.deviceAddress()) + " "
                    + HEX.formatHex(iface.ifaceAddress()));
            System.out.flush();
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
            String[] connect = in.readLine().split(" ", -1); // CONNECT device iface
            RmaLane lane = (RmaLane) iface.connect(HEX.parseHex(connect[1]), HEX.parseHex(connect[2]),
                    new ChannelInboundHandlerAdapter()).sync().channel();
            MemorySegment region = arena.allocate(size, 4096);
            Patterns.fill(region, 0, 1);
            MemoryRegistration registration = loop.submit(() -> lane.register(region)).get();
            System.out.println("KEY " + HEX.formatHex(registration.packedKey()));
            System.out.flush();
            for (String line; (line = in.readLine()) != null && !line.equals("EXIT"); ) {
                String[] f = line.split(" ");
                if (f[0].equals("CHECK")) {
                    long offset = Long.parseLong(f[1]);
                    long bad = Patterns.firstMismatch(region.asSlice(offset, Long.parseLong(f[2])),
                            offset, Integer.parseInt(f[3]));
                    System.out.println(bad < 0 ? "OK" : "BAD " + bad);
                } else if (f[0].equals("PUT")) {
                    System.out.println(put(lane, loop, f, arena));
                } else {
                    System.out.println("ERR unknown command " + f[0]);
                }
                System.out.flush();
            }
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
        }
    }

    private static String put(RmaLane lane, EventLoop loop, String[] f, Arena arena) throws Exception {
        long offset = Long.parseLong(f[2]);
        MemorySegment src = arena.allocate(Long.parseLong(f[3]));
        Patterns.fill(src, offset, Integer.parseInt(f[4]));
        try {
            RemoteKey key = loop.submit(() -> lane.unpackKey(Unpooled.wrappedBuffer(HEX.parseHex(f[1])))).get();
            var done = lane.channel().writeAndFlush(RmaOp.put(key, offset, src)).await();
            return done.isSuccess() ? "OK" : "ERR " + done.cause();
        } catch (Exception e) {
            return "ERR " + e;
        }
    }
}
