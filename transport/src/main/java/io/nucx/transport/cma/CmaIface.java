package io.nucx.transport.cma;

import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.EventLoop;
import io.netty.util.concurrent.Future;
import io.nucx.transport.Capability;
import io.nucx.transport.Device;
import io.nucx.transport.HostId;
import io.nucx.transport.Iface;
import io.nucx.transport.IfaceAttributes;
import io.nucx.transport.IfaceParams;
import io.nucx.transport.Transport;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.EnumSet;

/**
 * A cma iface. It listens for nothing and connects nothing: a peer's memory is reached by pid, so the address says
 * which kernel and which process.
 * <pre>
 * device address  +-----------------+---------+     iface address: empty
 *                 |   host id:u64   | pid:u32 |     (little-endian)
 *                 +-----------------+---------+
 * </pre>
 * Reachable: the same host id (one boot of one kernel, one network namespace). Whether the kernel lets this process
 * read the peer is a separate question, asked at lane selection ({@link #accessRefusal}), as UCX's
 * {@code uct_cma_iface_is_reachable_v2} does.
 */
final class CmaIface implements Iface {

    static final int DEVICE_ADDRESS_LENGTH = 12;

    /**
     * UCX's cma figures ({@code ucx_info -d}): latency 80 ns, overhead 2 us (one system call per chunk), bandwidth
     * 11145 MB/s dedicated; zero-copy transfers of any size, moved 512 KiB per call.
     */
    static IfaceAttributes attributes0() {
        return new IfaceAttributes(EnumSet.of(Capability.GET_ZCOPY, Capability.PUT_ZCOPY, Capability.PENDING,
                Capability.CONNECT_TO_IFACE, Capability.ERRHANDLE_PEER_FAILURE),
                0, 0, 0, 80e-9, 0, 11145e6, 0, 2e-6, 0, Long.MAX_VALUE, Integer.MAX_VALUE, Cma.CHUNK);
    }

    private final Transport transport;
    private final Device device;
    private final EventLoop loop;
    private final IfaceAttributes attributes = attributes0();

    CmaIface(Transport transport, IfaceParams params) {
        this.transport = transport;
        this.device = params.device();
        this.loop = params.eventLoop();
    }

    @Override
    public Transport transport() {
        return transport;
    }

    @Override
    public Device device() {
        return device;
    }

    @Override
    public IfaceAttributes attributes() {
        return attributes;
    }

    @Override
    public byte[] deviceAddress() {
        return ByteBuffer.allocate(DEVICE_ADDRESS_LENGTH).order(ByteOrder.LITTLE_ENDIAN).putLong(HostId.get())
                .putInt(Cma.pid()).array();
    }

    @Override
    public byte[] ifaceAddress() {
        return new byte[0];
    }

    /** The pid in a cma device address, or -1 if the address is not one. */
    static int pidOf(byte[] deviceAddress) {
        return deviceAddress.length == DEVICE_ADDRESS_LENGTH
                ? ByteBuffer.wrap(deviceAddress).order(ByteOrder.LITTLE_ENDIAN).getInt(8) : -1;
    }

    private static long hostOf(byte[] deviceAddress) {
        return ByteBuffer.wrap(deviceAddress).order(ByteOrder.LITTLE_ENDIAN).getLong(0);
    }

    @Override
    public boolean isReachable(byte[] remoteDevice, byte[] remoteIface) {
        return remoteDevice.length == DEVICE_ADDRESS_LENGTH && hostOf(remoteDevice) == HostId.get()
                && pidOf(remoteDevice) > 0;
    }

    /** UCX's wireup probe: a 16-byte read at address 0 of the peer; EPERM means the kernel will refuse us. */
    @Override
    public String accessRefusal(byte[] remoteDevice, byte[] remoteIface) {
        if (!isReachable(remoteDevice, remoteIface)) {
            return "cma: the peer runs on another host (or its address is not a cma address)";
        }
        int pid = pidOf(remoteDevice);
        if (pid == Cma.pid()) {
            return null;
        }
        try (Cma cma = new Cma()) {
            return cma.mayAccess(pid) ? null : "cma: process_vm_readv(pid " + pid + ") permission probe: "
                    + CmaNative.errnoName(CmaNative.EPERM);
        } catch (CmaException e) {
            return "cma: " + e.getMessage();
        }
    }

    /**
     * An RMA lane to the peer process: a {@link CmaChannel}, active as soon as it is registered (nothing to set up:
     * the kernel checks permission on every call, and the permission probe ran at lane selection).
     */
    @Override
    public ChannelFuture connect(byte[] remoteDevice, byte[] remoteIface, ChannelHandler laneHandler) {
        CmaChannel ch = new CmaChannel(pidOf(remoteDevice));
        if (!isReachable(remoteDevice, remoteIface)) {
            ch.unsafe().closeForcibly();
            return ch.newFailedFuture(new IllegalArgumentException("cma cannot reach a process on another host"));
        }
        ch.pipeline().addLast("nucx.lane", laneHandler);
        return loop.register(ch);
    }

    @Override
    public Future<?> close() {
        return loop.newSucceededFuture(null);
    }

    @Override
    public String toString() {
        return "cma/" + device.name() + "(pid " + Cma.pid() + ")";
    }
}
