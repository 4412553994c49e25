package io.nucx.transport.self;

import java.net.SocketAddress;

/** The address of one end of a self channel: the iface id and which side. */
public final class SelfAddress extends SocketAddress {
    private final long ifaceId;
    private final String side;

    public SelfAddress(long ifaceId, String side) {
        this.ifaceId = ifaceId;
        this.side = side;
    }

    public long ifaceId() {
        return ifaceId;
    }

    @Override
    public String toString() {
        return "self:" + Long.toHexString(ifaceId) + "/" + side;
    }
}
