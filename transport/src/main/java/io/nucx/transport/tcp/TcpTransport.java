package io.nucx.transport.tcp;

import io.nucx.transport.AbstractTransport;
import io.nucx.transport.Availability;
import io.nucx.transport.Device;
import io.nucx.transport.Iface;
import io.nucx.transport.IfaceParams;
import io.nucx.transport.IoEngine;
import io.nucx.transport.NucxConfig;

import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * TCP as a nucx transport: Netty's socket channels on io_uring, epoll or NIO ({@link IoEngine}),
 * connect-to-iface, active messages framed by {@link AmFrameLayout}.
 */
public final class TcpTransport extends AbstractTransport {

    public static final String NAME = "tcp";

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
        out.sort(java.util.Comparator.comparing(Device::name));
        return out;
    }

    /** The device the configured bind address belongs to ("lo" for 127.0.0.1). */
    @Override
    public Device defaultDevice(NucxConfig config) throws Exception {
        InetAddress bind = bindAddress(config);
        NetworkInterface ni = bind.isAnyLocalAddress() ? null : NetworkInterface.getByInetAddress(bind);
        return new Device(ni != null ? ni.getName() : bind.getHostAddress(), "network");
    }

    static InetAddress bindAddress(NucxConfig config) {
        String addr = config.string(NucxConfig.TCP_BIND_ADDR);
        try {
            return InetAddress.getByName(addr);
        } catch (Exception e) {
            throw config.invalid(NucxConfig.TCP_BIND_ADDR, "not an IP address (" + e.getMessage() + ")");
        }
    }

    @Override
    public Iface openIface(IfaceParams params) throws Exception {
        return TcpIface.open(this, params);
    }
}
