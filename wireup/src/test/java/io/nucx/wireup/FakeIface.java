package io.nucx.wireup;

import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.ImmediateEventExecutor;
import io.nucx.transport.Availability;
import io.nucx.transport.Capability;
import io.nucx.transport.Device;
import io.nucx.transport.Iface;
import io.nucx.transport.IfaceAttributes;
import io.nucx.transport.IfaceParams;
import io.nucx.transport.NucxConfig;
import io.nucx.transport.Transport;

import java.util.EnumSet;
import java.util.List;
import java.util.function.Predicate;

/**
 * An iface for lane selection tests: it only answers reachability (decided by the test from the remote device
 * address) and memory access; it never connects.
 */
final class FakeIface implements Iface {

    private final String transport;
    private final String device;
    private final byte[] deviceAddress;
    private final Predicate<byte[]> reachable;
    private final Predicate<byte[]> refused;

    /** An iface on device "fake0" that reaches every remote iface, or none. */
    FakeIface(String transport, boolean reachable) {
        this(transport, "fake0", new byte[0], remote -> reachable, remote -> false);
    }

    /**
     * @param reachable which remote device addresses this iface reaches
     * @param refused   which remote device addresses' memory this iface may not touch
     */
    FakeIface(String transport, String device, byte[] deviceAddress, Predicate<byte[]> reachable,
              Predicate<byte[]> refused) {
        this.transport = transport;
        this.device = device;
        this.deviceAddress = deviceAddress.clone();
        this.reachable = reachable;
        this.refused = refused;
    }

    @Override
    public Transport transport() {
        return new Transport() {
            @Override
            public String name() {
                return transport;
            }

            @Override
            public Availability availability() {
                return Availability.available();
            }

            @Override
            public List<Device> devices(NucxConfig config) {
                return List.of(device());
            }

            @Override
            public Iface openIface(IfaceParams params) {
                throw new UnsupportedOperationException();
            }
        };
    }

    @Override
    public Device device() {
        return new Device(device, transport);
    }

    @Override
    public IfaceAttributes attributes() {
        return new IfaceAttributes(EnumSet.of(Capability.AM_SHORT, Capability.AM_BCOPY), 8192, 65536, 64, 0, 0, 1e9,
                0, 0, 0);
    }

    @Override
    public byte[] deviceAddress() {
        return deviceAddress.clone();
    }

    @Override
    public byte[] ifaceAddress() {
        return new byte[0];
    }

    @Override
    public boolean isReachable(byte[] remoteDeviceAddress, byte[] remoteIfaceAddress) {
        return reachable.test(remoteDeviceAddress);
    }

    @Override
    public String accessRefusal(byte[] remoteDeviceAddress, byte[] remoteIfaceAddress) {
        return refused.test(remoteDeviceAddress) ? transport + " may not touch that peer's memory" : null;
    }

    @Override
    public ChannelFuture connect(byte[] remoteDeviceAddress, byte[] remoteIfaceAddress, ChannelHandler laneHandler) {
        throw new UnsupportedOperationException();
    }

    @Override
    public Future<?> close() {
        return ImmediateEventExecutor.INSTANCE.newSucceededFuture(null);
    }

    @Override
    public String toString() {
        return "fake-" + transport;
    }
}
