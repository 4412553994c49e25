package io.nucx.transport.shm;

import java.net.SocketAddress;

/** One end of a shm connection: the process and the iface in it. */
public record ShmAddress(long pid, long ifaceId) {
    @Override
    public String toString() {
        return "shm:" + pid + "/" + ifaceId;
    }

    static final class Socket extends SocketAddress {
        private static final long serialVersionUID = 1L;
        final ShmAddress address;

        Socket(ShmAddress address) {
            this.address = address;
        }

        @Override
        public String toString() {
            return address.toString();
        }
    }
}
