package io.nucx.transport.tcp;

import io.nucx.transport.config.AbstractConfigTable;
import io.nucx.transport.config.ConfigEntry;

import java.net.InetAddress;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** The tcp transport's settings ({@code NUCX_TCP_*}). */
public final class TcpConfig extends AbstractConfigTable {

    /** How tcp lanes connect. */
    public enum Connect {
        /** To the peer's listening socket at once (connect-to-iface). */
        IFACE,
        /** Endpoint to endpoint after wireup's REQUEST/REPLY/ACK (connect-to-ep). */
        P2P
    }

    /** The engine, or empty for auto (io_uring, then epoll, then nio). */
    public static final ConfigEntry<Optional<TcpIoMode>> IO = ConfigEntry.choice("TCP_IO", "auto",
            "TCP engine; auto takes the first that loads: io_uring, epoll, nio (epoll when busy-polling)", engines());
    /** How tcp lanes connect: to the peer's iface (listening socket), or endpoint to endpoint (p2p wireup). */
    public static final ConfigEntry<Connect> CONNECT = ConfigEntry.choice("TCP_CONNECT", "iface",
            "How tcp lanes connect: iface (to the peer's listening socket at once) | p2p (endpoint to endpoint after "
                    + "a REQUEST/REPLY/ACK exchange on an auxiliary connect-to-iface lane)",
            List.of(Connect.IFACE, Connect.P2P));
    /** Address the tcp iface listens on. */
    public static final ConfigEntry<InetAddress> BIND_ADDR = ConfigEntry.of("TCP_BIND_ADDR", "127.0.0.1",
            "IP address the tcp iface binds to; its port is chosen by the system", "an IP address", text -> {
                try {
                    return InetAddress.getByName(text.trim());
                } catch (Exception e) {
                    throw new IllegalArgumentException("not an IP address (" + e.getMessage() + ")");
                }
            });
    /** Largest active-message frame (header and payload) one tcp lane carries: UCT's seg size. */
    public static final ConfigEntry<Long> SEG_SIZE = ConfigEntry.size("TCP_SEG_SIZE", "64k",
            "Largest payload of one tcp active-message frame (bcopy fragment size)", 8192, 16L << 20);

    static final TcpConfig TABLE = new TcpConfig();

    public TcpConfig() {
        super("tcp transport", RANK_TRANSPORT, IO, CONNECT, BIND_ADDR, SEG_SIZE);
    }

    private static Map<String, Optional<TcpIoMode>> engines() {
        Map<String, Optional<TcpIoMode>> m = new LinkedHashMap<>();
        m.put("auto", Optional.empty());
        for (TcpIoMode mode : TcpIoMode.values()) {
            m.put(mode.configName(), Optional.of(mode));
        }
        return m;
    }
}
