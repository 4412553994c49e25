package io.nucx.transport.tcp;

import io.netty.handler.ssl.OpenSsl;
import io.nucx.transport.NucxConfig;
import io.nucx.transport.config.AbstractConfigTable;
import io.nucx.transport.config.ConfigEntry;

import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** The tcp transport's settings ({@code NUCX_TCP_*}). */
public final class TcpConfig extends AbstractConfigTable {

    /** How tcp lanes connect. */
    public enum Connect {
        /** To the peer's listening socket at once (connect-to-iface). */
        IFACE,
        /** Endpoint to endpoint after wireup's REQUEST/REPLY/ACK (connect-to-ep). */
        P2P
    }

    /** How tcp lanes connect: to the peer's iface (listening socket), or endpoint to endpoint (p2p wireup). */
    public static final ConfigEntry<Connect> CONNECT = ConfigEntry.choice("TCP_CONNECT", "iface",
            "How tcp lanes connect: iface (to the peer's listening socket at once) | p2p (endpoint to endpoint after "
                    + "a REQUEST/REPLY/ACK exchange on an auxiliary connect-to-iface lane)",
            List.of(Connect.IFACE, Connect.P2P));
    /**
     * Addresses the tcp ifaces listen on, one iface each (a node on two networks: two tcp lanes, and failover from
     * one to the other); a malformed or repeated address is refused.
     */
    public static final ConfigEntry<List<InetAddress>> BIND_ADDR = ConfigEntry.of("TCP_BIND_ADDR", "127.0.0.1",
            "IP address the tcp iface binds to (comma-separated: one tcp iface per address, e.g. one per network); "
                    + "its port is chosen by the system", "IP addresses, comma-separated", TcpConfig::bindAddresses);
    /**
     * Largest active-message frame (header and payload) one tcp lane carries: UCT's seg size. 128 KiB: the receiver
     * reads each fragment's header and payload apart, so fewer fragments are fewer reads; against 64 KiB, eager
     * ping-pongs of 128, 256 and 512 KiB took 0.92, 0.89 and 0.84 of the time on loopback, where 256 KiB fragments
     * were slower than 128 at 512 KiB (1.09) and made the rendezvous's placed frames 512 KiB (BENCHMARKS.md).
     */
    public static final ConfigEntry<Long> SEG_SIZE = ConfigEntry.size("TCP_SEG_SIZE", "128k",
            "Largest payload of one tcp active-message frame (bcopy fragment size)", 8192, 16L << 20);
    /** Large payloads read from the socket straight into the receiver's buffer ({@link AmFrameDecoder}). */
    public static final ConfigEntry<Boolean> PLACE = ConfigEntry.bool("TCP_PLACE", "y",
            "Read a large fragment's payload from the socket straight into the receive buffer it belongs to, where "
                    + "the receiver knows it, rather than into the lane's buffers and then copying (y/n; not with TLS, "
                    + "not on io_uring)");
    /** Which congestion control lanes run ({@link TcpCongestion}). */
    public static final ConfigEntry<String> CONGESTION = ConfigEntry.of("TCP_CONGESTION", "auto",
            "Congestion control of tcp lanes: auto (a lane to a loopback address leaves a pacing algorithm, the "
                    + "system's bbr, for cubic: bbr paces loopback bursts, 1 MiB ping-pongs took 1.4x as long under it; "
                    + "other lanes as the system says) | system (every lane as the system says) | an algorithm of "
                    + "net.ipv4.tcp_available_congestion_control for every lane (not with NUCX_TCP_IO=nio)",
            "auto | system | an algorithm name", TcpConfig::congestion);

    /** TLS on tcp lanes ({@link TcpTls}). */
    public static final ConfigEntry<Boolean> TLS = ConfigEntry.bool("TCP_TLS", "n",
            "TLS on tcp lanes (y/n): every lane is a TLS connection, certificates from NUCX_TCP_TLS_CERT/KEY/CA; both "
                    + "sides must agree");
    /** This worker's certificate chain, PEM. */
    public static final ConfigEntry<String> TLS_CERT = ConfigEntry.string("TCP_TLS_CERT", "",
            "PEM file of this worker's certificate chain (needed with NUCX_TCP_TLS=y)");
    /** Its private key, PEM PKCS#8. */
    public static final ConfigEntry<String> TLS_KEY = ConfigEntry.string("TCP_TLS_KEY", "",
            "PEM file of this worker's private key, PKCS#8 (needed with NUCX_TCP_TLS=y)");
    /** The certificates a peer's chain must lead to. */
    public static final ConfigEntry<String> TLS_CA = ConfigEntry.string("TCP_TLS_CA", "",
            "PEM file of the certificates a peer's chain must lead to (needed with NUCX_TCP_TLS=y)");
    /** Whether accepted lanes require the peer's certificate too. */
    public static final ConfigEntry<Boolean> TLS_MUTUAL = ConfigEntry.bool("TCP_TLS_MUTUAL", "n",
            "Lanes a peer connects must present a certificate that leads to NUCX_TCP_TLS_CA too (y/n)");
    /** Which TLS implementation. */
    public static final ConfigEntry<String> TLS_PROVIDER = ConfigEntry.choice("TCP_TLS_PROVIDER", "auto",
            "TLS implementation: auto (OpenSSL through netty-tcnative-boringssl-static when it loads, else the JDK's), "
                    + "openssl or jdk", "auto", "openssl", "jdk");

    static final TcpConfig TABLE = new TcpConfig();

    public TcpConfig() {
        super("tcp transport", RANK_TRANSPORT, CONNECT, BIND_ADDR, SEG_SIZE, PLACE, CONGESTION, TLS, TLS_CERT,
                TLS_KEY, TLS_CA, TLS_MUTUAL, TLS_PROVIDER);
    }

    /** With TLS on, the three files must be given and readable; OpenSSL, when asked for, must load. */
    @Override
    public void conclude(NucxConfig config) {
        if (!config.get(TLS)) {
            return;
        }
        for (ConfigEntry<String> file : List.of(TLS_CERT, TLS_KEY, TLS_CA)) {
            String path = config.get(file).trim();
            if (path.isEmpty()) {
                throw config.invalid(file, "needed with NUCX_TCP_TLS=y");
            }
            if (!Files.isReadable(Path.of(path))) {
                throw config.invalid(file, "cannot read " + path);
            }
        }
        if (config.get(TLS_PROVIDER).equals("openssl") && !OpenSsl.isAvailable()) {
            throw config.invalid(TLS_PROVIDER, "OpenSSL does not load here: " + OpenSsl
                    .unavailabilityCause());
        }
    }

    private static String congestion(String text) {
        String name = text.trim();
        if (name.equals(TcpCongestion.AUTO) || name.equals(TcpCongestion.SYSTEM)) {
            return name;
        }
        List<String> available = TcpCongestion.procList("tcp_available_congestion_control");
        if (!name.matches("[a-z0-9_]{1,15}") || !available.contains(name)) {
            throw new IllegalArgumentException("'" + name + "' is not auto, system or one of this kernel's algorithms "
                    + "(net.ipv4.tcp_available_congestion_control: " + (available.isEmpty() ? "unreadable"
                    : String.join(" ", available)) + ")");
        }
        return name;
    }

    private static List<InetAddress> bindAddresses(String text) {
        List<InetAddress> out = new ArrayList<>();
        for (String addr : text.split(",")) {
            InetAddress a;
            try {
                a = InetAddress.getByName(addr.trim());
            } catch (Exception e) {
                throw new IllegalArgumentException("'" + addr.trim() + "' is not an IP address (" + e.getMessage()
                        + ")");
            }
            if (out.contains(a)) {
                throw new IllegalArgumentException(a.getHostAddress() + " is listed twice");
            }
            out.add(a);
        }
        return List.copyOf(out);
    }
}
