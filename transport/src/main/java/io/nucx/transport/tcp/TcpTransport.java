package io.nucx.transport.tcp;

import io.nucx.transport.AbstractTransport;
import io.nucx.transport.Availability;
import io.nucx.transport.Device;
import io.nucx.transport.Iface;
import io.nucx.transport.IfaceParams;
import io.nucx.transport.IoEngine;
import io.nucx.transport.NucxConfig;
import io.nucx.transport.config.ConfigTable;

import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;

/**
 * TCP as a nucx transport: Netty's socket channels on io_uring, epoll or NIO ({@link IoEngine}),
 * connect-to-iface, active messages framed by {@link AmFrameLayout}.
 */
public final class TcpTransport extends AbstractTransport {

    public static final String NAME = "tcp";

    /**
     * Which congestion control tcp lanes run under {@code config} on {@code engine} ({@code NUCX_TCP_CONGESTION}), in
     * words.
     *
     * @throws io.nucx.transport.NucxConfigException for a setting the engine cannot carry out
     */
    public static String congestionControl(NucxConfig config, IoEngine engine) {
        return TcpCongestion.of(config, engine).describe();
    }

    public TcpTransport() {
        super(NAME);
    }

    @Override
    public Availability availability() {
        return Availability.available(); // NIO needs nothing native
    }

    /** The network interfaces that are up and have an address. */
    @Override
    public List<Device> devices(NucxConfig config) {
        List<Device> out = new ArrayList<>();
        try {
            for (NetworkInterface ni : Collections.list(NetworkInterface.getNetworkInterfaces())) {
                if (ni.isUp() && ni.getInetAddresses().hasMoreElements()) {
                    out.add(new Device(ni.getName(), "network"));
                }
            }
        } catch (SocketException e) {
            // no interfaces listed: the bind device below still works
        }
        out.sort(Comparator.comparing(Device::name));
        return out;
    }

    /** The device of the first configured bind address ("lo" for 127.0.0.1). */
    @Override
    public Device defaultDevice(NucxConfig config) throws Exception {
        return ifaceDevices(config).get(0);
    }

    /**
     * One device per address NUCX_TCP_BIND_ADDR lists (comma-separated), so a worker opens one tcp iface per network
     * it is told to use (a node on two networks: two tcp lanes, and failover from one to the other). Named after its
     * network interface, with "@address" when two addresses share one.
     */
    @Override
    public List<Device> ifaceDevices(NucxConfig config) throws Exception {
        List<InetAddress> addresses = config.get(TcpConfig.BIND_ADDR);
        List<String> names = new ArrayList<>();
        for (InetAddress a : addresses) {
            NetworkInterface ni = a.isAnyLocalAddress() ? null : NetworkInterface.getByInetAddress(a);
            names.add(ni != null ? ni.getName() : a.getHostAddress());
        }
        List<Device> out = new ArrayList<>();
        for (int i = 0; i < addresses.size(); i++) {
            String n = names.get(i);
            boolean shared = Collections.frequency(names, n) > 1;
            out.add(new Device(shared ? n + "@" + addresses.get(i).getHostAddress() : n, "network"));
        }
        return out;
    }

    /** The bind address of {@code device} (one of {@link #ifaceDevices}); the first for any other name. */
    static InetAddress bindAddress(NucxConfig config, Device device) throws Exception {
        List<InetAddress> addresses = config.get(TcpConfig.BIND_ADDR);
        List<Device> devices = new TcpTransport().ifaceDevices(config);
        for (int i = 0; i < devices.size(); i++) {
            if (devices.get(i).name().equals(device.name())) {
                return addresses.get(i);
            }
        }
        return addresses.get(0);
    }

    @Override
    public ConfigTable configTable() {
        return TcpConfig.TABLE;
    }

    @Override
    public Iface openIface(IfaceParams params) throws Exception {
        return TcpIface.open(this, params);
    }
}
