package io.nucx.transport.rdma;

import io.netty.channel.EventLoop;
import io.netty.channel.IoEventLoop;
import io.netty.channel.epoll.EpollIoHandle;
import io.netty.channel.uring.IoUringIoHandle;
import io.nucx.transport.Availability;
import io.nucx.transport.Device;
import io.nucx.transport.Iface;
import io.nucx.transport.IfaceParams;
import io.nucx.transport.NucxConfig;
import io.nucx.transport.AbstractTransport;
import io.nucx.transport.config.ConfigTable;

import java.util.ArrayList;
import java.util.List;

/**
 * RDMA over reliable-connected (RC) verbs queue pairs, through FFM bindings to {@code libibverbs.so.1}
 * (NUCX_VERBS_LIB names another library, e.g. nucx's verbs emulator for tests). One device per active port,
 * named "device:port" as UCX names them. Probed once per library: whether it loads, whether
 * {@code ibv_get_device_list} finds devices (else its errno), whether any port is ACTIVE; the reason says which step
 * failed.
 */
public final class RdmaTransport extends AbstractTransport {

    public static final String NAME = "rdma";

    private final String library;
    private volatile Probe probe;

    private record Probe(Availability availability, List<Device> devices, Verbs verbs) {
    }

    /** The library NUCX_VERBS_LIB / nucx.verbs.lib names, or the system's. */
    public RdmaTransport() {
        this(null);
    }

    /** The transport over {@code library} (a soname or a path); null for NUCX_VERBS_LIB's. */
    public RdmaTransport(String library) {
        super(NAME);
        this.library = library;
    }

    /** The transport over the library {@code config} names (NUCX_VERBS_LIB), probed anew if it is another one. */
    @Override
    public RdmaTransport forConfig(NucxConfig config) {
        String lib = config.get(RdmaConfig.VERBS_LIB);
        return lib.equals(library()) ? this : new RdmaTransport(lib);
    }

    /** The library this transport binds. */
    public String library() {
        return library != null ? library : NucxConfig.fromEnvironment().get(RdmaConfig.VERBS_LIB);
    }

    @Override
    public Availability availability() {
        return probe().availability();
    }

    @Override
    public List<Device> devices(NucxConfig config) {
        return probe().devices();
    }

    private Probe probe() {
        Probe p = probe;
        if (p == null) {
            synchronized (this) {
                p = probe;
                if (p == null) {
                    p = probe = probe0(library());
                }
            }
        }
        return p;
    }

    private static Probe probe0(String lib) {
        Verbs verbs;
        try {
            verbs = Verbs.load(lib);
        } catch (IllegalArgumentException e) {
            return unavailable("rdma: cannot load " + lib + " (" + e.getMessage() + "): install rdma-core's "
                    + "libibverbs1, or name the library with NUCX_VERBS_LIB");
        } catch (UnsatisfiedLinkError e) {
            return unavailable("rdma: " + lib + " lacks " + e.getMessage() + " (rdma-core too old?)");
        } catch (IllegalCallerException e) {
            return unavailable("rdma: native access is not enabled (run java with "
                    + "--enable-native-access=ALL-UNNAMED): " + e.getMessage());
        }
        List<String> names;
        try {
            names = RdmaContext.deviceNames(verbs);
        } catch (VerbsException e) {
            String why = e.errno() == Verbs.ENOSYS ? " (the kernel has no RDMA support: no NETLINK_RDMA, no "
                    + "/sys/class/infiniband_verbs)" : "";
            return unavailable("rdma: no RDMA device: " + e.getMessage() + why);
        }
        if (names.isEmpty()) {
            return unavailable("rdma: no RDMA device (ibv_get_device_list found none, or no provider for them)");
        }
        List<Device> devices = new ArrayList<>();
        List<String> down = new ArrayList<>();
        for (String name : names) {
            try (RdmaContext rc = RdmaContext.open(verbs, name)) {
                if (rc.portActive()) {
                    devices.add(new Device(name + ":" + RdmaContext.PORT, NAME));
                } else {
                    down.add(name + " port " + RdmaContext.PORT + " " + IbvPortAttr.stateName(rc.portState));
                }
            } catch (VerbsException e) {
                down.add(name + ": " + e.getMessage());
            }
        }
        if (devices.isEmpty()) {
            return unavailable("rdma: no active port: " + String.join(", ", down));
        }
        return new Probe(Availability.available(), List.copyOf(devices), verbs);
    }

    private static Probe unavailable(String reason) {
        return new Probe(Availability.unavailable(reason), List.of(), null);
    }

    /** Every active port: a worker opens one iface per device, so two devices give two rails (UCX's multi-rail). */
    @Override
    public List<Device> ifaceDevices(NucxConfig config) {
        return devices(config);
    }

    @Override
    public Availability availabilityOn(EventLoop loop) {
        return isCompatible(loop) ? Availability.available() : Availability.unavailable(incompatibility(loop));
    }

    /** Loops whose engine can watch a raw fd: epoll or io_uring, directly or inside ShmIoHandler. */
    static boolean isCompatible(EventLoop loop) {
        return loop instanceof IoEventLoop io && (io.isCompatible(EpollIoHandle.class)
                || io.isCompatible(IoUringIoHandle.class));
    }

    static String incompatibility(EventLoop loop) {
        return "rdma: the event loop must run the epoll or io_uring engine (directly or inside ShmIoHandler) to "
                + "watch the completion channel (NIO cannot poll a raw fd); this one is "
                + loop.getClass().getSimpleName();
    }

    @Override
    public Iface openIface(IfaceParams params) throws Exception {
        Probe p = probe();
        if (!p.availability().isAvailable()) {
            throw new IllegalStateException(p.availability().reason());
        }
        return RdmaIface.open(this, params, p.verbs());
    }

    @Override
    public ConfigTable configTable() {
        return RdmaConfig.TABLE;
    }
}
