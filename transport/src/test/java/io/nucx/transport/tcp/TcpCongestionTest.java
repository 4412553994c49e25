package io.nucx.transport.tcp;

import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.nucx.transport.AbstractIface;
import io.nucx.transport.Iface;
import io.nucx.transport.IfaceParams;
import io.nucx.transport.IoEngine;
import io.nucx.transport.NucxConfig;
import io.nucx.transport.NucxConfigException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * {@code NUCX_TCP_CONGESTION} on real lanes: the algorithm each end's socket runs, read back with {@code getsockopt
 * TCP_CONGESTION}. Loopback lanes leave a pacing algorithm under auto, lanes to a host address keep the system's,
 * system changes nothing, a named algorithm goes on every lane; a name the kernel lacks, or one asked of the nio
 * engine, stops start-up naming the setting.
 */
@Timeout(60)
class TcpCongestionTest {

    private final List<EventLoopGroup> groups = new ArrayList<>();
    private final List<Iface> ifaces = new ArrayList<>();

    @AfterEach
    void close() throws Exception {
        for (Iface i : ifaces) {
            i.close().await(10, TimeUnit.SECONDS);
        }
        for (EventLoopGroup g : groups) {
            g.shutdownGracefully(0, 1, TimeUnit.SECONDS).await(10, TimeUnit.SECONDS);
        }
    }

    /** Hands over the channel a peer connected, once active. */
    private static final class Accepted extends ChannelInboundHandlerAdapter {
        final CompletableFuture<Channel> channel = new CompletableFuture<>();

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            channel.complete(ctx.channel());
            ctx.fireChannelActive();
        }
    }

    private Iface open(IoEngine engine, Map<String, String> env, Accepted accepted) throws Exception {
        EventLoopGroup g = new MultiThreadIoEventLoopGroup(1, engine.ioHandlerFactory());
        groups.add(g);
        TcpTransport t = new TcpTransport();
        NucxConfig config = NucxConfig.of(env, Map.of());
        Iface i = t.openIface(new IfaceParams(g.next(), t.defaultDevice(config),
                () -> accepted != null ? accepted : new ChannelInboundHandlerAdapter(), config));
        ifaces.add(i);
        return i;
    }

    /** The algorithms of a lane's two ends: {connecting, accepted}. */
    private String[] lane(IoEngine engine, Map<String, String> env) throws Exception {
        assumeTrue(engine.availability().isAvailable(), () -> engine.availability().reason());
        Accepted accepted = new Accepted();
        Iface b = open(engine, env, accepted);
        Iface a = open(engine, env, null);
        Channel ch = ((AbstractIface) a).eventLoop().submit(() ->
                a.connect(b.deviceAddress(), b.ifaceAddress(), new ChannelInboundHandlerAdapter())).get()
                .sync().channel();
        Channel in = accepted.channel.get(10, TimeUnit.SECONDS);
        return new String[] {TcpCongestion.read(ch), TcpCongestion.read(in)};
    }

    private static Map<String, String> env(String... kv) {
        Map<String, String> m = new HashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put(kv[i], kv[i + 1]);
        }
        return m;
    }

    private static String system() {
        String s = TcpCongestion.systemDefault();
        assumeTrue(!s.isEmpty(), "no /proc/sys/net/ipv4/tcp_congestion_control here");
        return s;
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"EPOLL", "IO_URING"})
    void underAutoALoopbackLaneLeavesAPacingAlgorithm(IoEngine engine) throws Exception {
        String system = system();
        // cubic and reno do not pace without the fq qdisc: kept; anything else (bbr) is left for cubic.
        String expected = system.equals("cubic") || system.equals("reno") ? system
                : TcpCongestion.procList("tcp_available_congestion_control").contains("cubic") ? "cubic" : "reno";
        String[] ends = lane(engine, env());
        assertEquals(expected, ends[0], "the connecting end (the system's default is " + system + ")");
        assertEquals(expected, ends[1], "the accepting end (the system's default is " + system + ")");
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"EPOLL", "IO_URING"})
    void systemLeavesEveryLaneAsTheSystemMakesIt(IoEngine engine) throws Exception {
        String system = system();
        String[] ends = lane(engine, env("NUCX_TCP_CONGESTION", "system"));
        assertEquals(system, ends[0]);
        assertEquals(system, ends[1]);
    }

    @ParameterizedTest
    @EnumSource(value = IoEngine.class, names = {"EPOLL", "IO_URING"})
    void aNamedAlgorithmGoesOnEveryLane(IoEngine engine) throws Exception {
        system();
        String[] ends = lane(engine, env("NUCX_TCP_CONGESTION", "reno")); // reno is always built in
        assertEquals("reno", ends[0]);
        assertEquals("reno", ends[1]);
    }

    @Test
    void underAutoALaneToAHostAddressKeepsTheSystems() throws Exception {
        String system = system();
        InetAddress host = hostAddress();
        assumeTrue(host != null, "no up, non-loopback IPv4 address here");
        assertFalse(TcpCongestion.isLoopback(host));
        String[] ends = lane(IoEngine.EPOLL, env("NUCX_TCP_BIND_ADDR", host.getHostAddress()));
        assertEquals(system, ends[0], "the connecting end, to " + host.getHostAddress());
        assertEquals(system, ends[1], "the accepting end, from " + host.getHostAddress());
    }

    private static InetAddress hostAddress() throws Exception {
        for (NetworkInterface ni : Collections.list(NetworkInterface.getNetworkInterfaces())) {
            if (ni.isUp() && !ni.isLoopback()) {
                for (InetAddress a : Collections.list(ni.getInetAddresses())) {
                    if (a instanceof Inet4Address) {
                        return a;
                    }
                }
            }
        }
        return null;
    }

    @Test
    void loopbackIsKnownInBothFamiliesAndMapped() throws Exception {
        assertTrue(TcpCongestion.isLoopback(InetAddress.getByName("127.0.0.1")));
        assertTrue(TcpCongestion.isLoopback(InetAddress.getByName("127.3.2.1")));
        assertTrue(TcpCongestion.isLoopback(InetAddress.getByName("::1")));
        assertTrue(TcpCongestion.isLoopback(Inet6Address.getByAddress(null,
                new byte[] {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, (byte) 0xff, (byte) 0xff, 127, 0, 0, 1}, null)));
        assertFalse(TcpCongestion.isLoopback(InetAddress.getByName("10.0.0.1")));
        assertFalse(TcpCongestion.isLoopback(Inet6Address.getByAddress(null,
                new byte[] {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, (byte) 0xff, (byte) 0xff, 10, 0, 0, 1}, null)));
    }

    @Test
    void anAlgorithmTheKernelLacksOrOneAskedOfNioStopsStartUpNamingTheSetting() {
        system();
        NucxConfigException e = assertThrows(NucxConfigException.class,
                () -> lane(IoEngine.EPOLL, env("NUCX_TCP_CONGESTION", "nosuchalgo")));
        assertTrue(e.getMessage().contains("TCP_CONGESTION") && e.getMessage().contains("'nosuchalgo'")
                && e.getMessage().contains("tcp_available_congestion_control"), e.getMessage());
        e = assertThrows(NucxConfigException.class, () -> lane(IoEngine.NIO, env("NUCX_TCP_CONGESTION", "reno")));
        assertTrue(e.getMessage().contains("TCP_CONGESTION") && e.getMessage().contains("nio"), e.getMessage());
    }
}
