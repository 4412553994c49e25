package io.nucx.transport.tcp;

import java.net.InetSocketAddress;

/**
 * For tests that reach a tcp iface by hand (raw sockets, hostile peers): its socket address from the device and iface
 * bytes a worker address carries, decoded by the iface's own code.
 */
public final class TcpAddresses {

    private TcpAddresses() {
    }

    public static InetSocketAddress socketAddress(byte[] deviceAddress, byte[] ifaceAddress) {
        InetSocketAddress a = TcpIface.remoteSocketAddress(deviceAddress, ifaceAddress);
        if (a == null) {
            throw new IllegalArgumentException("not a tcp iface address: " + deviceAddress.length + " device bytes, "
                    + ifaceAddress.length + " iface bytes");
        }
        return a;
    }
}
