package io.nucx.examples;

import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.nio.NioIoHandler;
import io.nucx.ErrorMode;
import io.nucx.NucxBootstrap;
import io.nucx.Worker;
import io.nucx.WorkerAddress;
import io.nucx.protocol.select.SelectionKey;
import io.nucx.transport.Capability;
import io.nucx.transport.Device;
import io.nucx.transport.HandOffRate;
import io.nucx.transport.Iface;
import io.nucx.transport.IfaceAttributes;
import io.nucx.transport.IfaceParams;
import io.nucx.transport.IoEngine;
import io.nucx.transport.NucxConfig;
import io.nucx.transport.SharedRates;
import io.nucx.transport.cma.Cma;
import io.nucx.transport.cma.CmaConfig;
import io.nucx.transport.cma.CmaTransport;
import io.nucx.transport.rdma.RdmaTransport;
import io.nucx.transport.shm.ShmConfig;
import io.nucx.transport.Transport;
import io.nucx.transport.TransportConfig;
import io.nucx.transport.Transports;
import io.nucx.transport.shm.ShmIoHandler;
import io.nucx.transport.tcp.TcpConfig;
import io.nucx.transport.tcp.TcpTransport;
import picocli.CommandLine.Command;
import picocli.CommandLine;

import java.io.File;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;

/** {@code nucx info}: every transport, whether it runs here (or why not), its devices and attributes, as ucx_info -d. */
@Command(name = "info", mixinStandardHelpOptions = true,
        description = "List transports, their availability, devices and attributes (like ucx_info -d).")
final class InfoCommand implements Callable<Integer> {

    @picocli.CommandLine.Option(names = "--proto", paramLabel = "ADDRESS",
            description = "Print the protocol tables an endpoint to this worker address (hex) would use; "
                    + "nothing is sent.")
    String protoAddress;

    @picocli.CommandLine.Option(names = "--lanes", paramLabel = "ADDRESS",
            description = "Print the lanes an endpoint to this worker address (hex) would choose and why: every "
                    + "candidate with its UCX score, and which lane is AM, RMA and keepalive; nothing is sent.")
    String lanesAddress;

    @picocli.CommandLine.Option(names = "--err-mode", paramLabel = "MODE",
            description = "With --lanes: the endpoint's error mode, peer or none (default: NUCX_ERR_MODE).")
    String errMode;

    @picocli.CommandLine.Option(names = "--plot", paramLabel = "FILE.png",
            description = "With --proto: also draw the heap-memory table's envelope (time vs size per protocol).")
    File plot;

    @Override
    public Integer call() throws Exception {
        NucxConfig config = NucxConfig.fromEnvironment().validate();
        if (plot != null && protoAddress == null) {
            throw new CommandLine.ParameterException(new CommandLine(this), "--plot needs --proto");
        }
        if (errMode != null && lanesAddress == null) {
            throw new CommandLine.ParameterException(new CommandLine(this), "--err-mode needs --lanes");
        }
        if (lanesAddress != null) {
            WorkerAddress peer = WorkerAddress.fromHex(lanesAddress);
            Worker w = new NucxBootstrap().name("info").start();
            try {
                System.out.print(lanes(w, peer, errMode));
            } finally {
                w.close().get(10, TimeUnit.SECONDS);
            }
            return 0;
        }
        if (protoAddress != null) {
            Worker w = new NucxBootstrap().name("info").start();
            try {
                WorkerAddress peer = WorkerAddress.fromHex(protoAddress);
                System.out.print(w.protocolInfo(peer));
                if (plot != null) {
                    ProtoPlot.write(w.protocolTable(peer, SelectionKey.MemoryType.HEAP),
                            "nucx", plot);
                    System.out.println("plot written to " + plot);
                }
            } finally {
                w.close().get(10, TimeUnit.SECONDS);
            }
            return 0;
        }
        print(config, System.out);
        return 0;
    }

    /** What {@code --lanes} prints: the worker's own lane selection toward {@code peer}, with its trace. */
    static String lanes(Worker w, WorkerAddress peer, String errMode) {
        ErrorMode mode = errMode == null ? w.defaultErrorMode() : switch (errMode.toLowerCase(Locale.ROOT)) {
            case "peer" -> ErrorMode.PEER;
            case "failover" -> ErrorMode.FAILOVER;
            case "none" -> ErrorMode.NONE;
            default -> throw new IllegalArgumentException("--err-mode: '" + errMode
                    + "' is not peer, failover or none");
        };
        return w.laneInfo(peer, mode);
    }

    static void print(NucxConfig config, PrintStream out) throws Exception {
        // The loop workers get (the shm engine around a tcp one), so that every transport can open an iface on it.
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1,
                ShmIoHandler.newFactory(NioIoHandler.newFactory(), 0));
        // rdma watches its completion channel's fd, which a NIO loop cannot poll: it gets an epoll loop here.
        EventLoopGroup epollGroup = null;
        try {
            for (Transport t : Transports.all()) {
                out.println("#");
                out.println("#      Transport: " + t.name());
                if (!t.availability().isAvailable()) {
                    out.println("#   Availability: unavailable: " + t.availability().reason());
                    continue;
                }
                out.println("#   Availability: available");
                EventLoop loop = group.next();
                if (!t.availabilityOn(loop).isAvailable() && Epoll.isAvailable()) {
                    if (epollGroup == null) {
                        epollGroup = new MultiThreadIoEventLoopGroup(1,
                                EpollIoHandler.newFactory());
                    }
                    loop = epollGroup.next();
                }
                if (!t.availabilityOn(loop).isAvailable()) {
                    out.println("#     Event loop: " + t.availabilityOn(loop).reason());
                    continue;
                }
                if (t instanceof RdmaTransport r) {
                    out.println("#        Library: " + r.library() + "  (NUCX_VERBS_LIB)");
                }
                if (t.name().equals(CmaTransport.NAME)) {
                    out.println("#         Access: " + Cma.accessSummary());
                }
                Device dev = t.defaultDevice(config);
                List<String> devices = new ArrayList<>();
                for (Device d : t.devices(config)) {
                    devices.add(d.name());
                }
                out.println("#        Devices: " + String.join(", ", devices));
                out.println("#         Device: " + dev.name() + "  (the one workers open)");
                out.println("#           Type: " + dev.type());
                Iface iface = t.openIface(new IfaceParams(loop, dev, ChannelInboundHandlerAdapter::new,
                        config.with("TCP_IO", "nio").with("TCP_CONGESTION", "system")));
                try {
                    printAttributes(iface.attributes(), out);
                    out.println("#       device address: " + iface.deviceAddress().length + " bytes");
                    out.println("#        iface address: " + iface.ifaceAddress().length + " bytes");
                } finally {
                    iface.close().sync();
                }
                if (t.name().equals(CmaTransport.NAME)) {
                    boolean fresh = CmaConfig.pricesFreshData(config);
                    out.println(String.format(Locale.ROOT, "#    %17s: %s", "data priced", fresh
                            ? String.format(Locale.ROOT, "fresh (NUCX_CMA_DATA): the rates above are a read's plus "
                            + "the hand-off's two transfers at %.2f MB/sec a copy",
                            HandOffRate.measured(config) / 1e6)
                            : "the same bytes (NUCX_CMA_DATA): the rates above are a read's own"));
                }
                if (t.name().equals(TcpTransport.NAME)) {
                    for (IoEngine m : IoEngine.values()) {
                        out.println(String.format(Locale.ROOT, "#    %17s: %s", "engine " + m.configName(),
                                m.availability()));
                    }
                    IoEngine engine = IoEngine.configured(config,
                            ShmConfig.loopSpinNanos(config, config.bool(NucxConfig.BUSY_POLL), false) > 0);
                    out.println("#      engine selected: " + engine.configName()
                            + " (NUCX_TCP_IO=" + config.get(TransportConfig.TCP_IO).map(IoEngine::configName)
                            .orElse("auto") + ")");
                    out.println("#   congestion control: " + TcpTransport.congestionControl(config, engine)
                            + " (NUCX_TCP_CONGESTION=" + config.get(TcpConfig.CONGESTION) + ")");
                }
            }
            out.println("#");
            if (!SharedRates.used().isEmpty()) {
                out.println("#   rates measured at start (NUCX_RATES_DIR=" + config.get(TransportConfig.RATES_DIR)
                        + ", NUCX_RATES_MAX_AGE=" + config.raw(TransportConfig.RATES_MAX_AGE) + "):");
                new TreeMap<>(SharedRates.used()).forEach((name, entry) ->
                        out.println(String.format(Locale.ROOT, "#    %17s: %s", name, entry.describe())));
                out.println("#");
            }
        } finally {
            group.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
            if (epollGroup != null) {
                epollGroup.shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
            }
        }
    }

    static void printAttributes(IfaceAttributes a, PrintStream out) {
        out.println("#");
        out.println("#      capabilities:");
        out.println(String.format(Locale.ROOT, "#            bandwidth: %.2f/ppn + %.2f MB/sec",
                a.bandwidthShared() / 1e6, a.bandwidthDedicated() / 1e6));
        if (a.copiesAreTheTransfer()) {
            out.println(String.format(Locale.ROOT, "#            copy rate: %.2f MB/sec (into and out of the transport's "
                    + "memory: the cost of moving a payload)", a.copyBandwidth() / 1e6));
        }
        if (a.hasBulkRate()) {
            out.println(String.format(Locale.ROOT, "#            bulk rate: %.2f MB/sec from %s (zero-copy GET and PUT "
                    + "that outgrew the caches)", a.bulkBandwidth() / 1e6, units(a.bulkFrom())));
        }
        out.println(String.format(Locale.ROOT, "#              latency: %.0f nsec", a.latencySeconds() * 1e9));
        out.println(String.format(Locale.ROOT, "#             overhead: %.0f nsec", a.overheadSeconds() * 1e9));
        if (a.has(Capability.AM_SHORT)) {
            out.println("#             am_short: <= " + units(a.maxShort()));
        }
        if (a.has(Capability.AM_BCOPY)) {
            out.println("#             am_bcopy: <= " + units(a.maxBcopy()));
        }
        if (a.has(Capability.AM_SHORT) || a.has(Capability.AM_BCOPY)) {
            out.println("#            am header: <= " + a.maxHeader());
        } else {
            out.println("#                   am: none (an RMA-only transport: never the AM lane)");
        }
        if (a.has(Capability.GET_ZCOPY)) {
            out.println("#            get_zcopy: <= " + zcopyUnits(a.maxZcopy()));
        }
        if (a.has(Capability.PUT_ZCOPY)) {
            out.println("#            put_zcopy: <= " + zcopyUnits(a.maxZcopy()));
        }
        if (a.has(Capability.ATOMIC64)) {
            out.println("#             atomic64: fetch-add, compare-swap (device)");
        }
        List<String> conn = new ArrayList<>();
        if (a.has(Capability.CONNECT_TO_EP)) {
            conn.add("to ep");
        }
        if (a.has(Capability.CONNECT_TO_IFACE)) {
            conn.add("to iface");
        }
        out.println("#           connection: " + String.join(", ", conn));
        out.println("#      device priority: " + a.priority());
        List<String> err = new ArrayList<>();
        if (a.has(Capability.ERRHANDLE_PEER_FAILURE)) {
            err.add("peer failure");
        }
        if (a.has(Capability.EP_CHECK)) {
            err.add("ep_check");
        }
        out.println("#       error handling: " + (err.isEmpty() ? "none" : String.join(", ", err)));
    }

    private static String zcopyUnits(long v) {
        return v == Long.MAX_VALUE ? "unlimited" : units(v);
    }

    static String units(long v) {
        if (v >= (1 << 20) && v % (1 << 20) == 0) {
            return (v >> 20) + "M";
        }
        if (v >= 1024 && v % 1024 == 0) {
            return (v >> 10) + "K";
        }
        return Long.toString(v);
    }
}
