package io.nucx;

import java.net.SocketAddress;

/** An endpoint's local or remote address: the worker's uuid and name, and the endpoint id on the local side. */
public final class EndpointAddress extends SocketAddress {
    private final long workerUuid;
    private final String workerName;

    public EndpointAddress(long workerUuid, String workerName) {
        this.workerUuid = workerUuid;
        this.workerName = workerName;
    }

    public long workerUuid() {
        return workerUuid;
    }

    public String workerName() {
        return workerName;
    }

    @Override
    public String toString() {
        return workerName + "@" + Long.toHexString(workerUuid);
    }
}
