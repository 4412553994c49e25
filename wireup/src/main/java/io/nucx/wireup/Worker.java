package io.nucx.wireup;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import io.netty.util.concurrent.PromiseCombiner;
import io.nucx.protocol.EndpointConfig;
import io.nucx.protocol.ProtocolCounters;
import io.nucx.protocol.select.ProtoCandidate;
import io.nucx.protocol.select.ProtoTable;
import io.nucx.protocol.select.SelectionCache;
import io.nucx.protocol.select.SelectionKey;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.select.Protocol;
import io.nucx.protocol.tag.EagerHeaders;
import io.nucx.protocol.tag.EagerProtocols;
import io.nucx.protocol.tag.SyncSends;
import io.nucx.protocol.tag.ZcopySends;
import io.nucx.protocol.tag.TagReplies;
import io.nucx.protocol.tag.RndvHeaders;
import io.nucx.protocol.tag.RndvProtocols;
import io.nucx.protocol.tag.RndvReceiver;
import io.nucx.protocol.tag.RndvScheme;
import io.nucx.protocol.tag.RndvSends;
import io.nucx.transport.AmFrame;
import io.nucx.transport.Capability;
import io.nucx.transport.rma.RmaLane;
import io.nucx.protocol.tag.EagerTagReceiver;
import io.nucx.protocol.tag.TagMatcher;
import io.nucx.protocol.tag.TagMessage;
import io.nucx.transport.Iface;
import io.nucx.transport.IfaceAttributes;
import io.nucx.transport.IfaceParams;
import io.nucx.transport.NucxConfig;
import io.nucx.transport.Transport;

import java.nio.channels.ClosedChannelException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * UCP's worker, bound to one event loop: it owns one iface per transport, its endpoints and its tag matching, and
 * touches them only on that loop, so none of it needs locks. Public methods may be called from any thread; they hand
 * their work to the loop.
 */
public final class Worker {

    private final Context context;
    private final EventLoop loop;
    private final EventLoopGroup ownedGroup;
    private final long uuid;
    private final String name;
    private final ChannelHandler endpointInitializer;
    private final List<Iface> ifaces = new ArrayList<>();
    private final WorkerAddress address;
    private final ProtocolCounters counters = new ProtocolCounters();
    private final TagMatcher matcher;
    private final EagerTagReceiver eagerReceiver;
    private final Map<Long, Endpoint> endpoints = new ConcurrentHashMap<>();
    /** EXPECTED / UNEXPECTED endpoints by (peer uuid, conn_sn), and the per-peer numbering. */
    private final EndpointMatch<Endpoint> match = new EndpointMatch<>();
    private final AtomicLong nextEndpointId = new AtomicLong();
    private final AtomicBoolean closed = new AtomicBoolean();
    private final Map<CacheKey, SelectionCache> selectionCaches = new ConcurrentHashMap<>();
    private final long bcopyThresh;
    private final long zcopyThresh;
    private final long rndvThresh;
    private final boolean protoInfo;
    private final RndvSends rndvSends;
    private final SyncSends syncSends = new SyncSends();
    private final ZcopySends zcopySends = new ZcopySends();
    private final List<Protocol> protocols;
    private final RndvReceiver rndvReceiver;
    /** Memory peers may operate on, our atomics waiting for their result, and the atomic protocol's receive side. */
    private final io.nucx.protocol.amo.MemoryRegistry memory;
    private final io.nucx.protocol.amo.AtomicRequests atomicRequests = new io.nucx.protocol.amo.AtomicRequests();
    private final io.nucx.protocol.amo.AmoReceiver amoReceiver;
    private final java.util.Deque<Throwable> laneFailures = new java.util.concurrent.ConcurrentLinkedDeque<>();
    private final Promise<Void> closeFuture;
    /** Reads peers' memory for rndv/get/zcopy; made on the loop at first use (it is confined to its thread). */
    private final java.util.Deque<Throwable> rmaFailures = new java.util.concurrent.ConcurrentLinkedDeque<>();
    private final ErrorMode defaultErrorMode;
    /** How many message lanes an endpoint may use (NUCX_MAX_RNDV_LANES, NUCX_MULTI_LANE_MAX_RATIO). */
    private final LaneSelector.BwLimits bwLimits;
    private final long keepaliveIntervalNanos;
    private final long keepaliveTimeoutNanos;
    /** Ticks of silence that fail a peer-mode endpoint: the timeout rounded up to whole intervals. */
    private final int keepaliveSilentTicks;
    private final io.netty.util.concurrent.ScheduledFuture<?> keepaliveTask;
    /** Seeded at random so message ids differ between workers (UCX's am_message_id). Loop only. */
    private long nextMessageId = ThreadLocalRandom.current().nextLong();

    Worker(Context context, EventLoop loop, EventLoopGroup ownedGroup, String name, ChannelHandler endpointInitializer)
            throws Exception {
        this.context = context;
        this.loop = loop;
        this.ownedGroup = ownedGroup;
        this.uuid = ThreadLocalRandom.current().nextLong();
        this.name = name;
        this.endpointInitializer = endpointInitializer;
        this.closeFuture = loop.newPromise();
        NucxConfig config = context.config();
        this.bcopyThresh = config.memunitsOrAuto(NucxConfig.BCOPY_THRESH, 0, Long.MAX_VALUE - 1);
        this.zcopyThresh = config.threshold(NucxConfig.ZCOPY_THRESH);
        this.rndvThresh = config.memunitsOrAuto(NucxConfig.RNDV_THRESH, 0, Long.MAX_VALUE - 1);
        this.protoInfo = config.bool(NucxConfig.PROTO_INFO);
        this.protocols = enabledProtocols(config);
        RndvScheme scheme = RndvScheme.parse(config.choice(NucxConfig.RNDV_SCHEME, "auto", "get_zcopy", "put_zcopy",
                "am"));
        this.rndvSends = new RndvSends(new RndvSends.RmaLanes() {
            @Override
            public RmaLane putLane(Channel ep) {
                return rmaLane(((Endpoint) ep).rmaChannel(Capability.PUT_ZCOPY));
            }

            @Override
            public RmaLane getLane(Channel ep) {
                return rmaLane(((Endpoint) ep).rmaChannel());
            }

            @Override
            public void putFailed(Channel ep, Throwable cause) {
                rmaFailed("rndv/put/zcopy on " + ep + " fell back to RNDV_DATA", cause);
            }
        }, counters);
        this.defaultErrorMode = switch (config.choice(NucxConfig.ERR_MODE, "peer", "failover", "none")) {
            case "peer" -> ErrorMode.PEER;
            case "failover" -> ErrorMode.FAILOVER;
            default -> ErrorMode.NONE;
        };
        this.bwLimits = new LaneSelector.BwLimits(config.integer(NucxConfig.MAX_RNDV_LANES, 1, 8),
                config.decimal(NucxConfig.MULTI_LANE_MAX_RATIO, 1, 1000));
        this.keepaliveIntervalNanos = config.keepaliveIntervalNanos();
        this.keepaliveTimeoutNanos = config.keepaliveTimeoutNanos();
        this.keepaliveSilentTicks = keepaliveIntervalNanos == Long.MAX_VALUE ? Integer.MAX_VALUE
                : (int) Math.min(Integer.MAX_VALUE, (keepaliveTimeoutNanos + keepaliveIntervalNanos - 1)
                / keepaliveIntervalNanos);
        this.matcher = new TagMatcher(loop, io.netty.buffer.ByteBufAllocator.DEFAULT,
                config.memunits(NucxConfig.MAX_MSG_SIZE), (ep, tag) -> ((Endpoint) ep).deliversToPipeline(tag),
                new TagReplies() {
                    @Override
                    public void sendRtr(Channel ep, long senderReqId, long receiverReqId, long size) {
                        ((Endpoint) ep).sendControl(AmFrame.of(AmIds.RNDV_RTR, ep.alloc().buffer(RndvHeaders.RTR_LENGTH)
                                .writeLongLE(senderReqId).writeLongLE(receiverReqId).writeLongLE(size)));
                    }

                    @Override
                    public void sendRtr(Channel ep, long senderReqId, long receiverReqId, long size, byte[] key) {
                        ((Endpoint) ep).sendControl(AmFrame.of(AmIds.RNDV_RTR, RndvHeaders.writeRtr(
                                ep.alloc().buffer(RndvHeaders.rtrLength(key)), senderReqId, receiverReqId, size,
                                key)));
                    }

                    @Override
                    public void sendSyncAck(Channel ep, long senderReqId, int status) {
                        ((Endpoint) ep).sendControl(AmFrame.of(AmIds.EAGER_SYNC_ACK,
                                ep.alloc().buffer(EagerHeaders.SYNC_ACK_LENGTH).writeLongLE(senderReqId)
                                        .writeByte(status)));
                    }

                    @Override
                    public void sendZcopyAck(Channel ep, long senderReqId) {
                        ((Endpoint) ep).sendControl(AmFrame.of(AmIds.EAGER_ZCOPY_ACK,
                                ep.alloc().buffer(EagerHeaders.ZCOPY_ACK_LENGTH).writeLongLE(senderReqId)));
                    }

                    @Override
                    public void sendAts(Channel ep, long senderReqId, int status) {
                        ((Endpoint) ep).sendControl(AmFrame.of(AmIds.RNDV_ATS, ep.alloc().buffer(RndvHeaders.ATS_LENGTH)
                                .writeLongLE(senderReqId).writeByte(status)));
                    }

                    @Override
                    public RmaLane rndvGetLane(Channel ep) {
                        return rmaLane(((Endpoint) ep).rmaChannel());
                    }

                    @Override
                    public void rndvGetFailed(Channel ep, Throwable cause) {
                        rmaFailed("rndv/get/zcopy on " + ep + " fell back to RTR", cause);
                    }

                    @Override
                    public RmaLane rndvPutLane(Channel ep) {
                        // No offers once the endpoint is closing: its peer may have ended its sends already, and
                        // an offer nobody answers would hold the buffer until that process exits.
                        RmaLane lane = ep.isActive() ? rmaLane(((Endpoint) ep).rmaChannel(Capability.PUT_ZCOPY)) : null;
                        return lane != null && lane.channel().isActive() ? lane : null;
                    }

                    @Override
                    public void rndvPutReleased(Channel ep) {
                        ((Endpoint) ep).putOffersReleased();
                    }
                }, counters, scheme);
        this.eagerReceiver = new EagerTagReceiver(matcher, syncSends, zcopySends);
        this.rndvReceiver = new RndvReceiver(matcher, rndvSends);
        this.memory = new io.nucx.protocol.amo.MemoryRegistry(uuid);
        this.amoReceiver = new io.nucx.protocol.amo.AmoReceiver(memory, atomicRequests,
                (ep, frame) -> ((Endpoint) ep).sendControl(frame));
        List<WorkerAddress.Entry> entries = new ArrayList<>();
        try {
            boolean allTransports = config.string(NucxConfig.TLS).equalsIgnoreCase("all");
            for (Transport t : context.transports()) {
                io.nucx.transport.Availability onLoop = t.availabilityOn(loop);
                if (!onLoop.isAvailable()) {
                    if (allTransports) {
                        continue; // "all" means all that can run here; a named transport must run
                    }
                    throw config.invalid(NucxConfig.TLS, onLoop.reason());
                }
                Iface iface = t.openIface(new IfaceParams(loop, t.defaultDevice(config),
                        () -> new LaneHandler(this, null), config));
                ifaces.add(iface);
                IfaceAttributes a = iface.attributes();
                entries.add(new WorkerAddress.Entry(t.name(), a.capabilities(), a.maxShort(), a.maxBcopy(),
                        (float) a.latencySeconds(), (float) a.overheadSeconds(), (float) a.bandwidth(), a.priority(),
                        iface.deviceAddress(), iface.ifaceAddress()));
            }
        } catch (Exception | Error e) {
            for (Iface i : ifaces) {
                i.close();
            }
            throw e;
        }
        this.address = new WorkerAddress(uuid, name, entries);
        // One timer per worker, not per endpoint: a tick walks every endpoint (UCX's keepalive progress does too).
        this.keepaliveTask = keepaliveIntervalNanos == Long.MAX_VALUE ? null : loop.scheduleAtFixedRate(
                this::keepaliveTick, keepaliveIntervalNanos, keepaliveIntervalNanos,
                java.util.concurrent.TimeUnit.NANOSECONDS);
    }

    private void keepaliveTick() {
        for (Endpoint ep : endpoints.values()) {
            ep.keepaliveTick(keepaliveSilentTicks, keepaliveTimeoutNanos);
        }
    }

    /** How long a graceful close waits for the peer to take outstanding sends: NUCX_KEEPALIVE_TIMEOUT. */
    long closeWaitNanos() {
        return keepaliveTimeoutNanos;
    }

    /** The error mode of endpoints made by {@link #connect(WorkerAddress)} (NUCX_ERR_MODE). */
    public ErrorMode defaultErrorMode() {
        return defaultErrorMode;
    }

    public long uuid() {
        return uuid;
    }

    public String name() {
        return name;
    }

    public Context context() {
        return context;
    }

    /** The loop every endpoint and lane of this worker runs on. */
    public EventLoop eventLoop() {
        return loop;
    }

    /** This worker's address, to give to peers. */
    public WorkerAddress address() {
        return address;
    }

    /** The opened ifaces, one per selected transport. */
    public List<Iface> ifaces() {
        return List.copyOf(ifaces);
    }

    /** How many messages each protocol carried. */
    public ProtocolCounters counters() {
        return counters;
    }

    /** Endpoints currently open. */
    public Collection<Endpoint> endpoints() {
        return List.copyOf(endpoints.values());
    }

    /** An endpoint's RMA lane channel as the protocols use it, or null (none, or not an RMA lane). */
    private static RmaLane rmaLane(Channel lane) {
        return lane instanceof RmaLane rma ? rma : null;
    }

    /**
     * Every tag protocol this worker runs, in registration (tie-break) order: at equal cost a copy protocol beats a
     * zero-copy one (its send completes without waiting for the receiver), and eager beats rendezvous (which carries
     * its own bias, ×0.99, where it should win).
     */
    static final List<Protocol> REGISTRY = List.of(EagerProtocols.SHORT, EagerProtocols.SINGLE_BCOPY,
            EagerProtocols.MULTI_BCOPY, EagerProtocols.SINGLE_ZCOPY, EagerProtocols.MULTI_ZCOPY,
            EagerProtocols.SYNC_SINGLE_BCOPY, EagerProtocols.SYNC_MULTI_BCOPY, RndvProtocols.TAG_RNDV,
            RndvProtocols.GET_ZCOPY, RndvProtocols.PUT_ZCOPY);

    /**
     * {@link #REGISTRY} filtered by NUCX_PROTOS: "all", names or globs ({@code egr/*}), or {@code ^...} to exclude.
     * A name that matches no protocol is refused, naming the setting. Then NUCX_RNDV_SCHEME leaves out the rendezvous
     * variants its receivers never run: put/zcopy unless put_zcopy, get/zcopy with put_zcopy, both with am (the
     * receiver decides the data protocol; the sender's table only says which RTS to send).
     */
    static List<Protocol> enabledProtocols(NucxConfig config) {
        RndvScheme scheme = RndvScheme.parse(config.choice(NucxConfig.RNDV_SCHEME, "auto", "get_zcopy", "put_zcopy",
                "am"));
        return listedProtocols(config).stream().filter(p -> switch (scheme) {
            case AUTO, GET_ZCOPY -> p != RndvProtocols.PUT_ZCOPY;
            case PUT_ZCOPY -> p != RndvProtocols.GET_ZCOPY;
            case AM -> p != RndvProtocols.PUT_ZCOPY && p != RndvProtocols.GET_ZCOPY;
        }).toList();
    }

    /** {@link #REGISTRY} filtered by NUCX_PROTOS alone. */
    private static List<Protocol> listedProtocols(NucxConfig config) {
        String spec = config.string(NucxConfig.PROTOS);
        if (spec.equals("all")) {
            return REGISTRY;
        }
        boolean exclude = spec.startsWith("^");
        List<java.util.regex.Pattern> patterns = new ArrayList<>();
        for (String part : (exclude ? spec.substring(1) : spec).split(",")) {
            String glob = part.trim();
            java.util.regex.Pattern re = java.util.regex.Pattern.compile(
                    java.util.regex.Pattern.quote(glob).replace("*", "\\E.*\\Q"));
            if (REGISTRY.stream().noneMatch(p -> re.matcher(p.name()).matches())) {
                throw config.invalid(NucxConfig.PROTOS, "'" + glob + "' matches no protocol; known: "
                        + REGISTRY.stream().map(Protocol::name).toList());
            }
            patterns.add(re);
        }
        List<Protocol> out = new ArrayList<>();
        for (Protocol p : REGISTRY) {
            boolean listed = patterns.stream().anyMatch(re -> re.matcher(p.name()).matches());
            if (listed != exclude) {
                out.add(p);
            }
        }
        return List.copyOf(out);
    }

    private record CacheKey(EndpointConfig config, SelectionKey.Locality locality) {
    }

    /**
     * The protocol tables of an endpoint configuration, shared by every endpoint of this worker with an equal one.
     * With NUCX_PROTO_INFO=y each new table is printed to standard output.
     */
    SelectionCache selectionCache(EndpointConfig config, SelectionKey.Locality locality) {
        return selectionCaches.computeIfAbsent(new CacheKey(config, locality), k -> new SelectionCache(
                protocols, config, locality, bcopyThresh < 0 ? ProtoCandidate.AUTO : bcopyThresh,
                zcopyThresh < 0 ? ProtoCandidate.AUTO : zcopyThresh == Long.MAX_VALUE ? ProtoCandidate.DISABLED
                        : zcopyThresh,
                rndvThresh < 0 ? ProtoCandidate.AUTO : rndvThresh, protoInfo ? table -> System.out.print(table) : null));
    }

    /**
     * The protocol table an endpoint to {@code remote} would use for tagged sends from {@code memory}, without
     * connecting or sending anything: the lanes are chosen from the two addresses, the table built from the lanes.
     */
    public ProtoTable protocolTable(WorkerAddress remote, SelectionKey.MemoryType memory) throws Exception {
        LaneSelector.Lanes lane = LaneSelector.selectLanes(ifaces, address, remote, defaultErrorMode, bwLimits, null);
        SelectionCache cache = selectionCache(lane.endpointConfig(), lane.locality());
        long key = SelectionKey.pack(SelectionKey.Operation.TAG_SEND, 0, SelectionKey.DatatypeClass.CONTIG, memory,
                lane.locality());
        return loop.submit(() -> cache.table(key)).get();
    }

    /**
     * The lanes an endpoint to {@code remote} would use and why, without connecting: every candidate pair of
     * transports per criterion (AM, RMA, keepalive) with its UCX score and verdict, then the chosen lanes. The peer
     * computes the same from the same two addresses.
     */
    public String laneInfo(WorkerAddress remote, ErrorMode mode) {
        List<String> trace = new ArrayList<>();
        StringBuilder out = new StringBuilder();
        out.append("# lanes from ").append(name).append(" (").append(Long.toHexString(uuid)).append(") to ")
                .append(remote.name()).append(" (").append(Long.toHexString(remote.uuid())).append("), error mode ")
                .append(mode.name().toLowerCase(java.util.Locale.ROOT)).append('\n');
        out.append("# transports here: ").append(address.entries().stream().map(WorkerAddress.Entry::transport)
                .toList()).append("; there: ").append(remote.entries().stream().map(WorkerAddress.Entry::transport)
                .toList()).append('\n');
        out.append(String.format(java.util.Locale.ROOT, "# %-10s %-6s    %-6s %-12s %s%n", "criterion", "local",
                "remote", "score", "verdict"));
        try {
            LaneSelector.Lanes lanes = LaneSelector.selectLanes(ifaces, address, remote, mode, bwLimits, trace);
            for (String line : trace) {
                out.append("# ").append(line).append('\n');
            }
            out.append("# lane[0] ").append(lanes.am().name()).append(": am")
                    .append(lanes.keepalive() != null ? ", keepalive" : "").append(", amo (as active messages)")
                    .append('\n');
            for (int i = 1; i < lanes.count(); i++) {
                out.append("# lane[").append(i).append("] ").append(lanes.lane(i).name()).append(": am_bw")
                        .append('\n');
            }
            if (lanes.rma() != null) {
                out.append("# rma lane ").append(lanes.rma().name()).append(": rma").append('\n');
            }
        } catch (UnreachableException e) {
            for (String line : trace) {
                out.append("# ").append(line).append('\n');
            }
            out.append("# no lanes: ").append(e.getMessage()).append('\n');
        }
        return out.toString();
    }

    /** {@link #protocolTable} for heap and direct memory, as NUCX_PROTO_INFO prints them. */
    public String protocolInfo(WorkerAddress remote) throws Exception {
        StringBuilder out = new StringBuilder();
        out.append("# lanes to ").append(remote.name()).append(": ")
                .append(LaneSelector.selectLanes(ifaces, address, remote).describe()).append('\n');
        for (SelectionKey.MemoryType mem : new SelectionKey.MemoryType[] {SelectionKey.MemoryType.HEAP,
                SelectionKey.MemoryType.DIRECT}) {
            ProtoTable t = protocolTable(remote, mem);
            out.append(t.format(t.entries().isEmpty() ? "" : t.entries().get(0).candidate().config()));
        }
        return out.toString();
    }

    ChannelHandler endpointInitializer() {
        return endpointInitializer;
    }

    TagMatcher matcher() {
        return matcher;
    }

    EagerTagReceiver eagerReceiver() {
        return eagerReceiver;
    }

    RndvReceiver rndvReceiver() {
        return rndvReceiver;
    }

    RndvSends rndvSends() {
        return rndvSends;
    }

    SyncSends syncSends() {
        return syncSends;
    }

    io.nucx.protocol.amo.AtomicRequests atomicRequests() {
        return atomicRequests;
    }

    io.nucx.protocol.amo.AmoReceiver amoReceiver() {
        return amoReceiver;
    }

    /**
     * Lets peers run atomics ({@link Endpoint#atomic}) on the 8-byte words of {@code segment} (native, 8-byte
     * aligned): returns the key to give them (out of band, like the worker address, or in a message). The words are
     * changed with the CPU's atomic instructions on this worker's loop, so local code that uses atomics on them
     * (e.g. {@code ValueLayout.JAVA_LONG.varHandle()}) sees consistent values. Keep the segment alive until
     * {@link #unregisterMemory}.
     */
    public io.nucx.protocol.amo.RemoteMemoryKey registerMemory(java.lang.foreign.MemorySegment segment) {
        return memory.register(segment);
    }

    /** Peers' atomics on that region fail from now on (their request is answered with "no such region"). */
    public void unregisterMemory(io.nucx.protocol.amo.RemoteMemoryKey key) {
        memory.unregister(key);
    }

    ZcopySends zcopySends() {
        return zcopySends;
    }

    long nextMessageId() {
        return nextMessageId++;
    }

    /**
     * Creates an endpoint to {@code remote} and returns it at once: writes are queued until its lanes connect, then
     * replayed in order. Lane selection happens here, so an unreachable peer fails now, with every reason.
     */
    public Endpoint connect(WorkerAddress remote) {
        return connect(remote, defaultErrorMode);
    }

    /**
     * {@link #connect(WorkerAddress)} with the given error mode; the peer's endpoint takes the same mode.
     *
     * <p>Connections to one peer worker are numbered 0, 1, 2... (conn_sn, per peer uuid). If the peer already
     * connected to us with this number and we created its endpoint on demand, that endpoint is returned (adopted)
     * instead of a second one; it keeps the error mode the peer asked for. Otherwise the new endpoint waits in the
     * EXPECTED queue, so that a REQUEST the peer sends for the same number pairs with it (simultaneous connect).
     */
    public Endpoint connect(WorkerAddress remote, ErrorMode mode) {
        if (closed.get()) {
            throw new IllegalStateException("worker " + name + " is closed");
        }
        LaneSelector.Lanes lane = LaneSelector.selectLanes(ifaces, address, remote, mode, bwLimits, null);
        // Loopback (our own uuid) is not matched: both ends would draw from the same sequence.
        boolean matched = remote.uuid() != uuid;
        Endpoint ep;
        synchronized (match) { // drawing the number, adopting and queueing must be one step against REQUESTs
            int sn = match.nextConnSn(remote.uuid());
            if (matched) {
                Endpoint adopted = match.takeUnexpected(remote.uuid(), sn);
                if (adopted != null) {
                    counters.counter(WIREUP_ADOPTED).increment();
                    return adopted;
                }
            }
            ep = Endpoint.outgoing(this, nextEndpointId.getAndIncrement(), remote, lane, mode, sn);
            endpoints.put(ep.endpointId(), ep);
            if (matched) {
                match.addExpected(remote.uuid(), sn, ep);
            }
        }
        loop.register(ep).addListener(f -> {
            if (f.isSuccess()) {
                ep.connectLanes();
            } else {
                ep.close();
            }
        });
        return ep;
    }

    /** Connects to the address in its packed form. */
    public Endpoint connect(byte[] remoteAddress) {
        return connect(WorkerAddress.decode(remoteAddress));
    }

    /** Counter: a simultaneous connect's REQUEST from a higher-uuid peer, ignored. */
    public static final String WIREUP_REQUEST_IGNORED = "wireup/request-ignored";
    /** Counter: a simultaneous connect's REQUEST from a lower-uuid peer, paired with our EXPECTED endpoint. */
    public static final String WIREUP_REQUEST_PAIRED = "wireup/request-paired";

    /** Counter: a {@code connect} that adopted the endpoint an earlier REQUEST of the peer created. */
    public static final String WIREUP_ADOPTED = "wireup/adopted";

    /** What became of a REQUEST: see {@link #onRequest}. */
    sealed interface RequestOutcome {
        /** The request belongs to this endpoint: created for it, or the EXPECTED one it paired with. */
        record Accepted(Endpoint endpoint) implements RequestOutcome {
        }

        /** Simultaneous connect, and the peer's uuid is higher: its request loses; our own REQUEST wins. */
        record Ignored(Endpoint expected) implements RequestOutcome {
        }

        /** The EXPECTED endpoint is not registered yet (connect runs on another thread): ask again later. */
        record Retry() implements RequestOutcome {
        }
    }

    /**
     * A wireup REQUEST arrived on {@code lane}. Loop only. UCX's rules (ucp_wireup_process_request):
     * <ol>
     *   <li>An endpoint of ours made by {@code connect} to that peer with the same conn_sn, still waiting for its
     *       REPLY (EXPECTED), means both sides connected at once. The request of the higher-uuid worker is ignored:
     *       if the peer's uuid is higher we ignore this one (ours, on our own lane, will be answered); if ours is
     *       higher, our endpoint pairs with this request and answers it.</li>
     *   <li>Otherwise an endpoint is created on demand (so protocols can reply), queued UNEXPECTED for a later
     *       {@code connect} to adopt, and answered with REPLY.</li>
     * </ol>
     */
    RequestOutcome onRequest(WireupMessage request, Channel lane) {
        assert loop.inEventLoop();
        WorkerAddress remote = request.address();
        boolean matched = remote.uuid() != uuid;
        ErrorMode mode = ErrorMode.fromWire(request.errMode());
        Endpoint expected = null;
        Endpoint ep = null;
        // Looking for an EXPECTED endpoint and queueing an UNEXPECTED one is one step against a concurrent connect:
        // otherwise a connect between the two would queue an EXPECTED endpoint and we would create a second pair.
        synchronized (match) {
            if (matched) {
                expected = match.expected(remote.uuid(), request.connSn());
            }
            if (expected == null) {
                LaneSelector.Lanes sel = LaneSelector.selectLanes(ifaces, address, remote, mode, bwLimits, null);
                // A p2p AM lane is not the lane the REQUEST came by: the endpoint waits for it in its stub.
                ep = Endpoint.incoming(this, nextEndpointId.getAndIncrement(), remote, sel,
                        sel.am().p2p() ? null : lane, mode,
                        request.srcEpId(), request.connSn());
                endpoints.put(ep.endpointId(), ep);
                loop.register(ep); // on the loop: done before a connect on another thread can adopt it
                if (matched) {
                    match.addUnexpected(remote.uuid(), request.connSn(), ep);
                }
            }
        }
        if (expected != null) {
            if (!expected.isRegistered()) {
                return new RequestOutcome.Retry();
            }
            if (Long.compareUnsigned(remote.uuid(), uuid) > 0) {
                counters.counter(WIREUP_REQUEST_IGNORED).increment();
                return new RequestOutcome.Ignored(expected);
            }
            counters.counter(WIREUP_REQUEST_PAIRED).increment();
            match.remove(remote.uuid(), request.connSn(), expected);
            expected.pairWithRequest(request, lane);
            return new RequestOutcome.Accepted(expected);
        }
        ep.replyTo(request, lane);
        if (closed.get()) {
            ep.close();
        }
        return new RequestOutcome.Accepted(ep);
    }

    /** Queue sizes toward {@code peerUuid}, {expected, unexpected}; for tests. */
    int[] matchQueueSizes(long peerUuid) {
        return match.sizes(peerUuid);
    }

    /**
     * A lane to {@code remote} over {@code transport} (a failover replacement the peer dialled), or null when this
     * worker has no such transport or cannot reach the peer with it.
     */
    LaneSelector.Lane laneTo(WorkerAddress remote, String transport) {
        for (int i = 0; i < ifaces.size(); i++) {
            WorkerAddress.Entry l = address.entries().get(i);
            if (!l.transport().equals(transport)) {
                continue;
            }
            for (WorkerAddress.Entry r : remote.entries()) {
                if (r.transport().equals(transport) && ifaces.get(i).isReachable(r.deviceAddress(), r.ifaceAddress())) {
                    return new LaneSelector.Lane(ifaces.get(i), l, r, 0);
                }
            }
        }
        return null;
    }

    /** The open endpoint with this id, or null. */
    Endpoint endpoint(long id) {
        return endpoints.get(id);
    }

    /** A lane was closed because of {@code cause}; the last few are kept for diagnostics. */
    void laneFailed(Throwable cause) {
        laneFailures.addLast(cause);
        while (laneFailures.size() > 16) {
            laneFailures.pollFirst();
        }
    }

    /** Why recent lanes were closed (malformed frames, protocol errors), oldest first, at most 16. */
    public List<Throwable> laneFailures() {
        return List.copyOf(laneFailures);
    }


    /**
     * A read or write of a peer's memory failed at run time; the message went by RTR or RNDV_DATA instead. Keeps the
     * last 16.
     */
    private void rmaFailed(String what, Throwable cause) {
        rmaFailures.addLast(new WireupException(what + ": " + cause.getMessage(), cause));
        while (rmaFailures.size() > 16) {
            rmaFailures.pollFirst();
        }
    }

    /**
     * Why recent reads or writes of peers' memory failed (each message then went by RTR or as RNDV_DATA), oldest
     * first, at most 16.
     */
    public List<Throwable> rmaFailures() {
        return List.copyOf(rmaFailures);
    }

    /** The endpoint no longer waits to be matched: paired with its peer, failed or closed. */
    void endpointMatched(Endpoint ep) {
        match.remove(ep.remoteWorkerAddress().uuid(), ep.connSn(), ep);
    }

    void endpointClosed(Endpoint ep) {
        endpoints.remove(ep.endpointId());
        endpointMatched(ep);
    }

    /**
     * Receives a tagged message whose tag matches {@code tag} under {@code mask} (mask -1: exact tag; 0: any tag).
     * Receives are matched in the order they were posted; a message that arrived earlier is taken at once.
     * The future's message is the caller's to release.
     */
    public Future<TagMessage> tagRecv(long tag, long mask) {
        return tagRecv(tag, mask, null);
    }

    /**
     * As {@link #tagRecv(long, long)}, writing the message into {@code into} (its writable bytes are the limit;
     * a longer message fails with {@code MessageTruncatedException}). The future's message content is a retained
     * slice of {@code into}.
     */
    public Future<TagMessage> tagRecv(long tag, long mask, ByteBuf into) {
        Promise<TagMessage> p = loop.newPromise();
        if (loop.inEventLoop()) {
            matcher.post(tag, mask, into, p);
        } else {
            loop.execute(() -> matcher.post(tag, mask, into, p));
        }
        return p;
    }

    /** Messages that arrived and wait for a receive; loop only. */
    public int unexpectedCount() {
        assert loop.inEventLoop();
        return matcher.unexpectedCount();
    }

    /**
     * Receives whose buffer a peer may still be writing into although their endpoint ended (TagMatcher's PUT safety
     * rule): held, neither completed nor failed, until the peer's last word or its exit. Loop only.
     */
    public int heldReceives() {
        assert loop.inEventLoop();
        return matcher.heldCount();
    }

    /**
     * Closes every endpoint (queued and in-flight sends fail), fails every posted receive, releases every held
     * message, closes the ifaces, and shuts down the event loop group if the worker made its own. Receives whose
     * buffer a live peer may still write into (rndv/put/zcopy, see {@link #heldReceives()}) are waited for up to
     * NUCX_KEEPALIVE_TIMEOUT, then parked: never completed, their buffers never released.
     */
    public Future<Void> close() {
        if (closed.compareAndSet(false, true)) {
            loop.execute(this::close0);
        }
        return closeFuture;
    }

    private void close0() {
        if (keepaliveTask != null) {
            keepaliveTask.cancel(false);
        }
        PromiseCombiner all = new PromiseCombiner(loop);
        for (Endpoint ep : endpoints.values()) {
            all.add(ep.close());
        }
        for (Iface i : ifaces) {
            all.add(i.close());
        }
        Promise<Void> done = loop.newPromise();
        all.finish(done);
        done.addListener(f -> {
            matcher.close(new ClosedChannelException());
            rndvSends.close(new ClosedChannelException());
            syncSends.close(new ClosedChannelException());
            zcopySends.close(new ClosedChannelException());
            // Receives whose buffers a live peer may still write into are not given up at once (TagMatcher's PUT
            // safety rule): they get the close bound to hear from their senders, then are parked, never released.
            matcher.heldReleased(keepaliveTimeoutNanos).addListener(h -> {
                matcher.parkHeld();
                if (ownedGroup != null) {
                    ownedGroup.shutdownGracefully(0, 2, java.util.concurrent.TimeUnit.SECONDS)
                            .addListener(g -> closeFuture.trySuccess(null));
                } else {
                    closeFuture.trySuccess(null);
                }
            });
        });
    }

    @Override
    public String toString() {
        return "Worker(" + name + " " + Long.toHexString(uuid) + " on " + ifaces + ")";
    }
}
