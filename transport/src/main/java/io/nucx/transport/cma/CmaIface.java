package io.nucx.transport.cma;

import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.nucx.transport.AbstractIface;
import io.nucx.transport.Capability;
import io.nucx.transport.HandOffRate;
import io.nucx.transport.HostId;
import io.nucx.transport.IfaceAttributes;
import io.nucx.transport.IfaceParams;
import io.nucx.transport.NucxConfig;
import io.nucx.transport.Transport;
import io.nucx.transport.rma.MemoryRegistration;
import io.nucx.transport.rma.RmaIface;

import java.lang.foreign.MemorySegment;
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
final class CmaIface extends AbstractIface implements RmaIface {

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

    /**
     * {@link #attributes0()} with the rates of a cma read measured on this machine at start ({@link CmaRate}): in
     * cache, and beyond the caches with the size it begins at; the static ones if that measurement failed. Priced for
     * fresh data unless NUCX_CMA_DATA says the same bytes ({@link #forFreshData}).
     */
    static IfaceAttributes measuredAttributes(NucxConfig config) {
        CmaRate.Figures measured = CmaRate.measured(config);
        IfaceAttributes attrs = measured == null ? attributes0() : measured.applyTo(attributes0());
        return CmaConfig.pricesFreshData(config) ? forFreshData(attrs, HandOffRate.measured(config)) : attrs;
    }

    /**
     * {@code attrs} for reads of memory its owner has just written ({@code handOff}: the bytes/s of a copy handed
     * between two cores, {@link HandOffRate}). Such a read finds the lines in the owner's core and takes them over,
     * and the owner's next write takes them back from the reader's: the two transfers the ring's hand-off makes per
     * byte, paid here one after the other on top of the read, where the ring's reader never reads the sender's buffer.
     * Measured as a ping-pong of new 1 MiB messages (BENCHMARKS.md, "Calibrating with fresh data"): a read of fresh
     * data and the writer's pass took 342-356 us in C (cma forced in nucx: 357-389) where the same bytes took 114-125.
     * Priced at the read's rate alone, cma was chosen over the ring from 19 KB in this machine's slow mode, and with
     * fresh data it lost to the ring at every size measured (1.3-3x from 64 KiB on).
     */
    static IfaceAttributes forFreshData(IfaceAttributes attrs, double handOff) {
        double handOffSecondsPerByte = 2 / handOff;
        IfaceAttributes fresh = attrs.withPerf(attrs.latencySeconds(), attrs.overheadSeconds(),
                1 / (1 / attrs.bandwidth() + handOffSecondsPerByte), attrs.regCostSeconds(), attrs.regCostPerByte());
        return attrs.hasBulkRate()
                ? fresh.withBulk(attrs.bulkFrom(), 1 / (1 / attrs.bulkBandwidth() + handOffSecondsPerByte)) : fresh;
    }

    CmaIface(Transport transport, IfaceParams params) {
        super(transport, params, measuredAttributes(params.config()), packer(DEVICE_ADDRESS_LENGTH)
                .putLong(HostId.get()).putInt(Cma.pid()).array(), new byte[0]);
    }

    /** The pid in a cma device address, or -1 if the address is not one. */
    static int pidOf(byte[] deviceAddress) {
        return deviceAddress.length == DEVICE_ADDRESS_LENGTH ? reader(deviceAddress).getInt(8) : -1;
    }

    @Override
    public boolean isReachable(byte[] remoteDevice, byte[] remoteIface) {
        return remoteDevice.length == DEVICE_ADDRESS_LENGTH && onThisHost(remoteDevice) && pidOf(remoteDevice) > 0;
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
            return failedLane(ch, new IllegalArgumentException("cma cannot reach a process on another host"));
        }
        return registerLane(eventLoop(), ch, laneHandler);
    }

    /** A key any cma peer on this host can use (see {@link CmaMemory}). */
    @Override
    public MemoryRegistration registerMemory(MemorySegment local) {
        return new CmaMemory(CmaKey.of(local), eventLoop());
    }

    @Override
    protected String describe() {
        return "(pid " + Cma.pid() + ")";
    }
}
