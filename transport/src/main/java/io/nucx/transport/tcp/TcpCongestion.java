package io.nucx.transport.tcp;

import io.netty.channel.Channel;
import io.netty.channel.unix.RawUnixChannelOption;
import io.nucx.transport.IoEngine;
import io.nucx.transport.NucxConfig;

import java.net.Inet6Address;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Which congestion control a tcp lane's socket runs ({@code NUCX_TCP_CONGESTION}), set by {@code setsockopt
 * TCP_CONGESTION} when the lane is made (epoll and io_uring; the JDK's sockets, nio's, have no such option).
 * <p>
 * Why loopback lanes leave a pacing algorithm: a loopback path has no queue to protect, yet BBR (the only pacing
 * algorithm in mainline Linux, the default on this machine) paces each burst at its bandwidth estimate once it has left
 * its start-up phase. Measured here, loopback ping-pongs of 1 MiB took 252-271 us under BBR and 184-192 under cubic,
 * and tag_bw 1 MiB moved 3.3-3.7 GB/s against 6.4-6.5 (BENCHMARKS.md); 8 B and 64 KiB were alike. Lanes to other hosts
 * keep the system's choice: there the algorithm is the network's business.
 */
final class TcpCongestion {

    /** Keep every lane as the system makes it. */
    static final String SYSTEM = "system";
    /** Loopback lanes leave a pacing algorithm (for cubic, else reno); other lanes as the system makes them. */
    static final String AUTO = "auto";

    /** {@code IPPROTO_TCP}, {@code TCP_CONGESTION}, {@code TCP_CA_NAME_MAX}. */
    static final RawUnixChannelOption OPTION = new RawUnixChannelOption("TCP_CONGESTION", 6, 13, 16);

    private static final Path PROC = Path.of("/proc/sys/net/ipv4");

    /** The algorithm loopback lanes get, or null to leave them as made. */
    private final String loopback;
    /** The algorithm other lanes get, or null. */
    private final String others;

    private TcpCongestion(String loopback, String others) {
        this.loopback = loopback;
        this.others = others;
    }

    /**
     * The policy {@code NUCX_TCP_CONGESTION} sets on an iface whose loop runs {@code engine}.
     *
     * @throws io.nucx.transport.NucxConfigException naming the setting, for an algorithm named with the nio engine
     */
    static TcpCongestion of(NucxConfig config, IoEngine engine) {
        String setting = config.get(TcpConfig.CONGESTION).trim();
        if (setting.equals(SYSTEM) || (engine == IoEngine.NIO && setting.equals(AUTO))) {
            return new TcpCongestion(null, null);
        }
        if (engine == IoEngine.NIO) {
            throw config.invalid(TcpConfig.CONGESTION, "the nio engine cannot set a socket's congestion control (the "
                    + "JDK has no option for it): run epoll or io_uring, or say auto or system");
        }
        if (!setting.equals(AUTO)) {
            return new TcpCongestion(setting, setting);
        }
        String system = systemDefault();
        if (system.isEmpty() || system.equals("cubic") || system.equals("reno")) {
            return new TcpCongestion(null, null); // neither paces (without the fq qdisc): nothing to change
        }
        return new TcpCongestion(procList("tcp_available_congestion_control").contains("cubic") ? "cubic" : "reno",
                null);
    }

    /** What the policy does, for {@code nucx info}: "cubic on loopback lanes, the system's bbr on others". */
    String describe() {
        String system = systemDefault().isEmpty() ? "the system's" : "the system's " + systemDefault();
        if (loopback == null && others == null) {
            return system + " on every lane";
        }
        return others != null ? others + " on every lane" : loopback + " on loopback lanes, " + system + " on others";
    }

    /** The algorithm a lane to {@code peer} gets, or null to leave it as the system makes it. */
    String forPeer(InetAddress peer) {
        return isLoopback(peer) ? loopback : others;
    }

    static boolean isLoopback(InetAddress a) {
        if (a.isLoopbackAddress()) {
            return true;
        }
        byte[] b = a.getAddress(); // ::ffff:127.x.y.z, as a dual-stack socket may report an IPv4 peer
        if (a instanceof Inet6Address && b.length == 16 && b[10] == (byte) 0xff && b[11] == (byte) 0xff) {
            for (int i = 0; i < 10; i++) {
                if (b[i] != 0) {
                    return false;
                }
            }
            return b[12] == 127;
        }
        return false;
    }

    /** The kernel's list in {@code /proc/sys/net/ipv4/NAME} (space-separated), or empty when it cannot be read. */
    static List<String> procList(String name) {
        try {
            String text = Files.readString(PROC.resolve(name)).trim();
            return text.isEmpty() ? List.of() : List.of(text.split("\\s+"));
        } catch (Exception e) {
            return List.of();
        }
    }

    /** The system's default algorithm ({@code net.ipv4.tcp_congestion_control}), or "" when unknown. */
    static String systemDefault() {
        List<String> l = procList("tcp_congestion_control");
        return l.isEmpty() ? "" : l.get(0);
    }

    /** Sets {@code algorithm} on {@code ch}'s socket. */
    static void apply(Channel ch, String algorithm) {
        byte[] name = algorithm.getBytes(StandardCharsets.US_ASCII);
        // The option's full length, zero-padded: the kernel reads the name up to its first NUL.
        ByteBuffer value = ByteBuffer.allocateDirect(OPTION.length()).put(name).position(0);
        ch.config().setOption(OPTION, value);
    }

    /** The algorithm {@code ch}'s socket runs. */
    static String read(Channel ch) {
        ByteBuffer v = ch.config().getOption(OPTION);
        StringBuilder b = new StringBuilder();
        while (v.hasRemaining()) {
            byte c = v.get();
            if (c == 0) {
                break;
            }
            b.append((char) c);
        }
        return b.toString();
    }
}
