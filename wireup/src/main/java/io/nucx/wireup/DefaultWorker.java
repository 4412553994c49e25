package io.nucx.wireup;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.ChannelHandler;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import io.netty.util.concurrent.PromiseCombiner;
import io.netty.util.internal.logging.InternalLogger;
import io.netty.util.internal.logging.InternalLoggerFactory;
import io.nucx.AmHandler;
import io.nucx.Endpoint;
import io.nucx.ErrorMode;
import io.nucx.NucxClosedException;
import io.nucx.WireupException;
import io.nucx.Worker;
import io.nucx.WorkerAddress;
import io.nucx.WorkerStats;
import io.nucx.protocol.MemoryBudget;
import io.nucx.protocol.MemoryDomain;
import io.nucx.protocol.ProtocolCodec;
import io.nucx.protocol.ProtocolCounters;
import io.nucx.protocol.ProtocolRegistry;
import io.nucx.protocol.ProtocolSettings;
import io.nucx.protocol.WorkerProtocols;
import io.nucx.protocol.amo.RemoteMemoryKey;
import io.nucx.protocol.select.ProtoTable;
import io.nucx.protocol.select.SelectionKey;
import io.nucx.protocol.tag.ReceivePostedAlreadyException;
import io.nucx.protocol.tag.TagMessage;
import io.nucx.protocol.tag.TagReceive;
import io.nucx.transport.Availability;
import io.nucx.transport.Device;
import io.nucx.transport.Iface;
import io.nucx.transport.IfaceAttributes;
import io.nucx.transport.IfaceParams;
import io.nucx.transport.NucxConfig;
import io.nucx.transport.Transport;
import io.nucx.transport.TransportConfig;
import io.nucx.transport.rma.RmaIface;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Deque;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.ToIntFunction;

/**
 * The {@link Worker} implementation. It owns the worker's ifaces (one per device of each transport: two RDMA ports are
 * two ifaces, two address entries, two rails), its endpoints by id, the
 * matching of connections between two workers ({@link EndpointMatch}), the protocols' shared state
 * ({@link WorkerProtocols}: tag matching, tables, registered memory) and the keepalive timer. Everything it owns is
 * touched on its loop only, except the endpoint map and the match queues, which {@code connect} may reach from
 * other threads.
 */
public final class DefaultWorker implements Worker {

    private final EventLoop loop;
    private final EventLoopGroup ownedGroup;
    private final long uuid;
    private final String name;
    private final ChannelHandler endpointInitializer;
    private final List<Iface> ifaces = new ArrayList<>();
    private final WorkerAddress address;
    private final ProtocolCounters counters = new ProtocolCounters();
    private final ProtocolRegistry registry = ProtocolRegistry.DEFAULT;
    private final WorkerProtocols protocols;
    private final Map<Long, EndpointChannel> endpoints = new ConcurrentHashMap<>();
    /** Endpoints that ended but wait for a peer's last word (their LINGER state). Loop only. */
    private final Set<EndpointChannel> lingering = ConcurrentHashMap.newKeySet();
    private final EndpointMatch<EndpointChannel> match = new EndpointMatch<>();
    private final RequestProcessor requests = new RequestProcessor(this);
    private final AtomicLong nextEndpointId = new AtomicLong();
    /**
     * The last {@link #GOODBYES_KEPT} endpoints that closed gracefully (said goodbye on every lane), by id, with the
     * peer they were wired to: a lane that peer announced as the close crossed it is told the same. Loop only.
     */
    private final Map<Long, Peer> saidGoodbye = new LinkedHashMap<>() {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Long, Peer> eldest) {
            return size() > GOODBYES_KEPT;
        }
    };

    /** The other side of an endpoint: the peer worker's uuid and its endpoint's id. */
    private record Peer(long uuid, long endpointId) { }
    private final AtomicBoolean closed = new AtomicBoolean();
    private final Promise<Void> closeFuture;
    private final ErrorMode defaultErrorMode;
    /** How many message lanes an endpoint may use (NUCX_MAX_RNDV_LANES, NUCX_MULTI_LANE_MAX_RATIO). */
    private final LaneSelector.BwLimits bwLimits;
    private final Keepalive keepalive;
    private final LoopTimer.Periodic keepaliveTask;
    private final LoopTimer.Periodic reaperTask;
    private final WireupSettings settings;
    /** The wireup key (NUCX_AUTH_TOKEN / NUCX_AUTH_KEY_FILE), or null when wireup is not authenticated. */
    private final WireupAuth auth;
    /** Writes queued by endpoints still wiring up, all together (NUCX_STUB_WORKER_BYTES). Loop only. */
    private final MemoryBudget stubPool;
    private final Deque<Throwable> laneFailures = new ConcurrentLinkedDeque<>();
    /** Writes waiting in stubs of endpoints still wiring up; wireups and their time; failures by cause. */
    private final AtomicInteger pendingWrites = new AtomicInteger();
    private final LongAdder wireups = new LongAdder();
    private final LongAdder wireupNanos = new LongAdder();
    private final Map<String, LongAdder> endpointErrors = new ConcurrentHashMap<>();
    /** Listeners waiting for the endpoint a client connects with the token they gave it (loop only). */
    private final Map<Integer, Consumer<Endpoint>> listened = new HashMap<>();
    private int nextToken;
    private final Deque<Throwable> rmaFailures = new ConcurrentLinkedDeque<>();
    private static final InternalLogger LOG = InternalLoggerFactory.getInstance(DefaultWorker.class);
    /** Lane failures logged per second at most ({@link #laneFailed}). */
    private static final int LANE_WARNINGS_PER_SECOND = 16;
    /** How many gracefully closed endpoints are remembered ({@link #saidGoodbye}): a late lane comes within moments. */
    private static final int GOODBYES_KEPT = 1024;
    private long laneWarningsSince = System.nanoTime();
    private int laneWarnings;
    private long laneWarningsSuppressed;

    private DefaultWorker(Context context, EventLoop loop, EventLoopGroup ownedGroup, String name,
                          ChannelHandler endpointInitializer) throws Exception {
        this.loop = loop;
        this.ownedGroup = ownedGroup;
        this.uuid = ThreadLocalRandom.current().nextLong();
        this.name = name;
        this.endpointInitializer = endpointInitializer;
        this.closeFuture = loop.newPromise();
        NucxConfig config = context.config();
        WireupSettings settings = WireupSettings.from(config);
        this.protocols = new WorkerProtocols(loop, ByteBufAllocator.DEFAULT, ProtocolSettings.from(config, registry),
                uuid, counters, settings.receiveLimits());
        this.settings = settings;
        this.auth = WireupAuth.from(config);
        this.stubPool = MemoryBudget.worker("NUCX_STUB_WORKER_BYTES", settings.stubWorkerBytes());
        this.defaultErrorMode = settings.errorMode();
        this.bwLimits = settings.bwLimits();
        this.keepalive = new Keepalive(settings.keepaliveIntervalNanos(), settings.keepaliveTimeoutNanos());
        List<WorkerAddress.Entry> entries = new ArrayList<>();
        try {
            for (Transport t : context.transports()) {
                Availability onLoop = t.availabilityOn(loop);
                if (!onLoop.isAvailable()) {
                    if (context.allTransports()) {
                        continue; // "all" means all that can run here; a named transport must run
                    }
                    throw config.invalid(TransportConfig.TLS, onLoop.reason());
                }
                for (Device device : t.ifaceDevices(config)) {
                    Iface[] opened = new Iface[1]; // lanes a peer connects to it learn which iface took them
                    Iface iface = t.openIface(new IfaceParams(loop, device,
                            () -> LaneInboundHandler.accepted(this, opened[0]), config));
                    opened[0] = iface;
                    ifaces.add(iface);
                    IfaceAttributes a = iface.attributes();
                    entries.add(new WorkerAddress.Entry(t.name(), a.capabilities(), a.maxShort(), a.maxBcopy(),
                            (float) a.latencySeconds(), (float) a.overheadSeconds(), (float) a.bandwidth(),
                            a.priority(), iface.deviceAddress(), iface.ifaceAddress()));
                }
            }
        } catch (Exception | Error e) {
            for (Iface i : ifaces) {
                i.close();
            }
            throw e;
        }
        this.address = new WorkerAddress(uuid, name, entries);
        // Registered memory is reached by every RMA device (UCX's ucp_mem_map registers on each memory domain).
        List<MemoryDomain> domains = new ArrayList<>();
        for (int i = 0; i < ifaces.size(); i++) {
            if (ifaces.get(i) instanceof RmaIface rma) {
                domains.add(new MemoryDomain(i, rma, LaneSelector.nameOf(ifaces.get(i))));
            }
        }
        protocols.memory().domains(domains);
        // One timer per worker, not per endpoint: a tick walks every endpoint (UCX's keepalive progress does too).
        // Fixed delay, not fixed rate: after the loop stalls, a fixed rate fires the missed ticks back to back, each
        // counting an interval of silence while the peer's frames still wait unread in the lane. Timed off the loop
        // (LoopTimer): a task waiting in the loop's scheduled queue costs two clock reads on every pass around it.
        this.keepaliveTask = !keepalive.enabled() ? null
                : LoopTimer.everyAfter(loop, keepalive.intervalNanos(), this::keepaliveTick);
        long reapEvery = Math.min(TimeUnit.SECONDS.toNanos(1), settings.wireupTimeoutNanos());
        this.reaperTask = LoopTimer.everyAfter(loop, reapEvery, this::reap);
    }

    /**
     * Endpoints whose lanes are all gone are failed and dropped, whatever their error mode: a lane's close normally
     * does it, and this catches what slipped past (an endpoint whose lane closed before it knew the lane).
     */
    private void reap() {
        for (EndpointChannel ep : endpoints.values()) {
            ep.lifecycle().reapIfLanesGone();
        }
    }

    /**
     * Opens the ifaces of {@code context}'s transports on {@code loop} and returns the running worker. {@code owned}:
     * a group the worker made for itself and shuts down on close, or null.
     */
    public static DefaultWorker start(Context context, EventLoop loop, EventLoopGroup owned, String name,
                                      ChannelHandler endpointInitializer) throws Exception {
        return new DefaultWorker(context, loop, owned, name, endpointInitializer);
    }

    /** One keepalive tick over every endpoint; the timer's, and tests' that step keepalive instead of waiting. */
    void keepaliveTick() {
        for (EndpointChannel ep : endpoints.values()) {
            ep.keepaliveTick(keepalive);
        }
    }

    /** Ticks of silence after which keepalive fails an endpoint. */
    int keepaliveTicksToExpire() {
        return keepalive.ticksToExpire();
    }

    // ------------------------------------------------------------ Worker

    @Override
    public String name() {
        return name;
    }

    @Override
    public long uuid() {
        return uuid;
    }

    @Override
    public WorkerAddress address() {
        return address;
    }

    @Override
    public EventLoop eventLoop() {
        return loop;
    }

    @Override
    public ErrorMode defaultErrorMode() {
        return defaultErrorMode;
    }

    @Override
    public Endpoint connect(WorkerAddress remote) {
        return connect(remote, defaultErrorMode);
    }

    @Override
    public Endpoint connect(byte[] remoteAddress) {
        return connect(WorkerAddress.decode(remoteAddress));
    }

    @Override
    public Endpoint connect(WorkerAddress remote, ErrorMode mode) {
        if (closed.get()) {
            throw new IllegalStateException("worker " + name + " is closed");
        }
        return connectOpen(remote, mode);
    }

    /** {@link #connect} past its check that the worker is open, which a close on another thread may follow at once. */
    Endpoint connectOpen(WorkerAddress remote, ErrorMode mode) {
        LaneSelector.Lanes lanes = selectLanes(remote, mode);
        boolean matched = remote.uuid() != uuid;
        EndpointChannel ep;
        synchronized (match) { // drawing the number, adopting and queueing are one step against REQUESTs
            int sn = match.nextConnSn(remote.uuid());
            if (matched) {
                EndpointChannel adopted = match.takeUnexpected(remote.uuid(), sn);
                if (adopted != null) {
                    counters.counter(WIREUP_ADOPTED).increment();
                    return adopted;
                }
            }
            ep = EndpointChannel.outgoing(this, newEndpointId(), remote, lanes, mode, sn);
            endpoints.put(ep.endpointId(), ep);
            if (matched) {
                match.addExpected(remote.uuid(), sn, ep);
            }
        }
        register(ep); // runs the wireup handler's handlerAdded, which connects the endpoint's own lane
        return ep;
    }

    /**
     * Connects to {@code remote} as a client of one of its listeners (UCX's client-server flow), which gave
     * {@code token}: the REQUEST says so, and the peer hands the endpoint it creates to that listener. Such endpoints
     * are never paired with others nor adopted by a {@code connect}. Any thread.
     */
    public Endpoint connectListened(WorkerAddress remote, ErrorMode mode, int token) {
        if (closed.get()) {
            throw new IllegalStateException("worker " + name + " is closed");
        }
        EndpointChannel ep = EndpointChannel.listened(this, newEndpointId(), remote, selectLanes(remote, mode), mode,
                token);
        endpoints.put(ep.endpointId(), ep);
        register(ep);
        return ep;
    }

    /**
     * Registers a filed endpoint on the loop. One whose registration comes after the worker's close began is closed
     * as it registers: the close closed the endpoints registered then (its step on the loop), not this one (a
     * connect on another thread that passed its check as the close began).
     */
    private void register(EndpointChannel ep) {
        loop.register(ep).addListener(f -> {
            if (!f.isSuccess() || closed.get()) {
                ep.close();
            }
        });
    }

    /**
     * A listener's accepted channel waits for the endpoint its client will connect: returns the token to give the
     * client ({@link #connectListened}), or -1 when 65,536 are already waiting. {@code onEndpoint} gets the endpoint
     * when the client's REQUEST arrives, after the REPLY. Loop only.
     */
    public int expectListened(Consumer<Endpoint> onEndpoint) {
        assert loop.inEventLoop();
        for (int i = 0; i <= 0xffff; i++) {
            int token = (nextToken + i) & 0xffff;
            if (!listened.containsKey(token)) {
                listened.put(token, onEndpoint);
                nextToken = token + 1;
                return token;
            }
        }
        return -1;
    }

    /** The accepted channel waiting for {@code token} gave up (closed): a REQUEST with it is refused. Loop only. */
    public void cancelListened(int token) {
        assert loop.inEventLoop();
        listened.remove(token);
    }

    boolean expectsListened(int token) {
        return listened.containsKey(token);
    }

    void takeListened(int token, EndpointChannel ep) {
        Consumer<Endpoint> l = listened.remove(token);
        if (l != null) {
            l.accept(ep);
        }
    }

    @Override
    public Collection<Endpoint> endpoints() {
        return List.copyOf(endpoints.values());
    }

    @Override
    public Future<TagMessage> tagRecv(long tag, long mask) {
        return tagRecv(tag, mask, null);
    }

    @Override
    public Future<TagMessage> tagRecv(long tag, long mask, ByteBuf into) {
        Promise<TagMessage> p = loop.newPromise();
        if (closed.get()) {
            p.tryFailure(closedError());
            return p;
        }
        TagReceive r = new TagReceive(tag, mask, into, p);
        if (loop.inEventLoop()) {
            protocols.matcher().post(r);
        } else {
            try {
                loop.execute(() -> protocols.matcher().post(r));
            } catch (RejectedExecutionException e) {
                p.tryFailure(closedError());
            }
        }
        return p;
    }

    /** Why a receive on this worker fails once it closed. */
    private NucxClosedException closedError() {
        return new NucxClosedException("worker " + name + " is closed: its receives fail, and no more may be "
                + "posted", null);
    }

    @Override
    public void setAmHandler(int id, AmHandler handler) {
        protocols.amHandlers().set(id, handler == null ? null
                : (message, endpoint) -> handler.onMessage(new ReceivedAm(message, (EndpointChannel) endpoint)));
    }

    @Override
    public void tagRecv(TagReceive receive) {
        if (loop.inEventLoop()) {
            protocols.matcher().post(receive);
            return;
        }
        try {
            loop.execute(() -> {
                try {
                    protocols.matcher().post(receive);
                } catch (ReceivePostedAlreadyException e) {
                    // The first post stands, and nobody is left to throw to. Failing the receive would clear its
                    // posted state, and the first copy, still queued, would come back to life ahead of later
                    // receives once it is posted again.
                    LOG.warn("worker {}: {}", name, e.getMessage());
                } catch (IllegalStateException e) {
                    receive.fail(e);
                }
            });
        } catch (RejectedExecutionException e) {
            receive.fail(closedError());
        }
    }

    @Override
    public RemoteMemoryKey registerMemory(MemorySegment segment) {
        return protocols.memory().register(segment);
    }

    @Override
    public void unregisterMemory(RemoteMemoryKey key) {
        protocols.memory().unregister(key);
    }

    @Override
    public Future<Void> flushRma() {
        return onEveryEndpoint(EndpointChannel::flushRma);
    }

    @Override
    public Future<Void> fenceRma() {
        return onEveryEndpoint(EndpointChannel::fenceRma);
    }

    /** Completes when {@code op}'s future on every endpoint open now has; fails with the first failure. */
    private Future<Void> onEveryEndpoint(Function<EndpointChannel, Future<Void>> op) {
        Promise<Void> done = loop.newPromise();
        List<Future<Void>> each = new ArrayList<>();
        for (EndpointChannel ep : endpoints.values()) {
            each.add(op.apply(ep));
        }
        loop.execute(() -> { // PromiseCombiner lives on the loop
            PromiseCombiner all = new PromiseCombiner(loop);
            each.forEach(all::add);
            all.finish(done);
        });
        return done;
    }

    @Override
    public ProtocolCounters counters() {
        return counters;
    }

    @Override
    public WorkerStats stats() {
        return stats;
    }

    /** One instance: meters hold it weakly, so it must live as long as the worker. */
    private final WorkerStats stats = new WorkerStats() {
            @Override
            public ProtocolCounters counters() {
                return counters;
            }

            @Override
            public int openEndpoints() {
                return endpoints.size();
            }

            @Override
            public int unexpectedMessages() {
                return protocols.matcher().unexpectedCount(); // a plain int of the loop's: may lag by a moment
            }

            @Override
            public int rendezvousInFlight() {
                return protocols.rndvInFlight().get();
            }

            @Override
            public int pendingWrites() {
                return pendingWrites.get();
            }

            @Override
            public long wireups() {
                return wireups.sum();
            }

            @Override
            public long wireupNanos() {
                return wireupNanos.sum();
            }

            @Override
            public Map<String, Long> endpointErrors() {
                Map<String, Long> out = new TreeMap<>();
                endpointErrors.forEach((k, v) -> out.put(k, v.sum()));
                return out;
            }
        };

    @Override
    public List<Throwable> laneFailures() {
        return List.copyOf(laneFailures);
    }

    @Override
    public List<Throwable> rmaFailures() {
        return List.copyOf(rmaFailures);
    }

    @Override
    public int unexpectedCount() {
        assert loop.inEventLoop();
        return protocols.matcher().unexpectedCount();
    }

    @Override
    public int heldReceives() {
        assert loop.inEventLoop();
        int n = 0;
        for (EndpointChannel ep : lingering) {
            n += ep.heldCount();
        }
        return n;
    }

    @Override
    public ProtoTable protocolTable(WorkerAddress remote, SelectionKey.MemoryType memory) throws Exception {
        return WorkerInfo.protocolTable(this, remote, memory);
    }

    @Override
    public String protocolInfo(WorkerAddress remote) throws Exception {
        return WorkerInfo.protocolInfo(this, remote);
    }

    @Override
    public String laneInfo(WorkerAddress remote, ErrorMode mode) {
        return WorkerInfo.laneInfo(this, remote, mode);
    }

    @Override
    public Future<Void> close() {
        if (closed.compareAndSet(false, true)) {
            loop.execute(this::close0);
        }
        return closeFuture;
    }

    /**
     * Endpoints close gracefully, ifaces close; then every posted receive fails and every unexpected message is
     * released; endpoints still lingering for a peer's last word, and endpoints made while the close ran, get the close
     * bound (NUCX_KEEPALIVE_TIMEOUT); then any of the latter still open ends at once, and what the lingering hold is
     * parked.
     */
    private void close0() {
        reaperTask.cancel(); // keepalive runs on until the endpoints are closed (below)
        PromiseCombiner all = new PromiseCombiner(loop);
        for (EndpointChannel ep : endpoints.values()) {
            if (ep.isRegistered()) { // one not yet registered closes as it registers, its codecs then in place
                all.add(ep.close());
            }
        }
        for (Iface i : ifaces) {
            all.add(i.close());
        }
        Promise<Void> done = loop.newPromise();
        all.finish(done);
        done.addListener(f -> {
            // Keepalive ran on until here: an endpoint waiting for its peer's goodbye over a lane that notices a gone
            // peer only when it sends (rdma's queue pairs) learns of it from its next EP_CHECK.
            if (keepaliveTask != null) {
                keepaliveTask.cancel();
            }
            protocols.matcher().close(closedError());
            Promise<Void> lingered = loop.newPromise();
            PromiseCombiner waits = new PromiseCombiner(loop);
            lingering.forEach(ep -> waits.add(ep.lifecycle().closedFuture()));
            // Endpoints made while the close ran (a peer's connect, closed as it was made) close on their own: their
            // graceful close is waited for as well, not cut off by the loop's end.
            endpoints.values().forEach(ep -> waits.add(ep.closeFuture()));
            waits.finish(lingered);
            Future<?> bound = loop.schedule(() -> lingered.trySuccess(null), closeWaitNanos(), TimeUnit.NANOSECONDS);
            lingered.addListener(h -> {
                bound.cancel(false);
                for (EndpointChannel ep : List.copyOf(endpoints.values())) {
                    // Past the bound an endpoint still open ends now (what it had fails), before its loop goes
                    ep.unsafe().close(ep.unsafe().voidPromise());
                }
                for (EndpointChannel ep : List.copyOf(lingering)) {
                    ep.lifecycle().park();
                }
                if (ownedGroup != null) {
                    ownedGroup.shutdownGracefully(0, 2, TimeUnit.SECONDS).addListener(g -> closeFuture.trySuccess(null));
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

    // ------------------------------------------------------------ for the package

    ProtocolRegistry registry() {
        return registry;
    }

    WorkerProtocols protocols() {
        return protocols;
    }

    ChannelHandler endpointInitializer() {
        return endpointInitializer;
    }

    RequestProcessor requests() {
        return requests;
    }

    EndpointMatch<EndpointChannel> match() {
        return match;
    }

    boolean isClosed() {
        return closed.get();
    }

    /** The opened ifaces, one per device of each selected transport, in the order of the address's entries. */
    List<Iface> ifaces() {
        return List.copyOf(ifaces);
    }

    WireupAuth auth() {
        return auth;
    }

    WireupSettings settings() {
        return settings;
    }

    /** A new endpoint's bound on writes it queues while wiring up, inside the worker's. */
    MemoryBudget newStubBudget() {
        return stubPool.endpoint("NUCX_STUB_EP_BYTES", settings.stubEndpointBytes());
    }

    /** Endpoints open now. */
    int endpointCount() {
        return endpoints.size();
    }

    long newEndpointId() {
        return nextEndpointId.getAndIncrement();
    }

    /** Whether {@code id} was given to an endpoint of this worker (which may have closed since). */
    boolean hadEndpoint(long id) {
        return id >= 0 && id < nextEndpointId.get();
    }

    /**
     * Whether endpoint {@code id}, closed, was among the last {@link #GOODBYES_KEPT} to close gracefully, wired to
     * endpoint {@code peerEpId} of the worker {@code peerUuid}. Loop only.
     */
    boolean saidGoodbye(long id, long peerUuid, long peerEpId) {
        Peer p = saidGoodbye.get(id);
        return p != null && p.uuid() == peerUuid && p.endpointId() == peerEpId;
    }

    /** An endpoint created on demand: registered on the loop (we are on it) and filed by id. */
    void registerEndpoint(EndpointChannel ep) {
        endpoints.put(ep.endpointId(), ep);
        loop.register(ep);
    }

    LaneSelector.Lanes selectLanes(WorkerAddress remote, ErrorMode mode) {
        return LaneSelector.selectLanes(ifaces, address, remote, mode, bwLimits, null);
    }

    LaneSelector.BwLimits bwLimits() {
        return bwLimits;
    }

    /**
     * An AM lane to {@code remote} that connects to its iface, over none of the lanes that failed ("transport/device":
     * another device of the same transport may take over), for a failover with no lane left.
     */
    LaneSelector.Lane selectReplacement(WorkerAddress remote, ErrorMode mode, Set<String> failedLanes) {
        return LaneSelector.selectReplacement(ifaces, address, remote, mode, failedLanes);
    }

    /**
     * The lane a peer dialled over {@code transport} to {@code acceptedBy} (which of our ifaces took it, so which of
     * our devices), or null when this worker has no such transport or the peer's address offers none. The peer's
     * entry is the first this iface reaches; when it reaches none, the first of the transport: the peer reached us,
     * and reachability is a dialler's question (a peer that closes has deleted its shm socket already, while its
     * last lane's LANE_ATTACH may still be on its way).
     */
    LaneSelector.Lane laneTo(WorkerAddress remote, String transport, Iface acceptedBy) {
        LaneSelector.Lane unreached = null;
        for (int i = 0; i < ifaces.size(); i++) {
            WorkerAddress.Entry l = address.entries().get(i);
            if (!l.transport().equals(transport) || (acceptedBy != null && ifaces.get(i) != acceptedBy)) {
                continue;
            }
            for (int j = 0; j < remote.entries().size(); j++) {
                WorkerAddress.Entry r = remote.entries().get(j);
                if (!r.transport().equals(transport)) {
                    continue;
                }
                if (ifaces.get(i).isReachable(r.deviceAddress(), r.ifaceAddress())) {
                    return new LaneSelector.Lane(ifaces.get(i), l, r, 0, i, j);
                }
                if (unreached == null && acceptedBy != null) {
                    unreached = new LaneSelector.Lane(ifaces.get(i), l, r, 0, i, j);
                }
            }
        }
        return unreached;
    }

    /** The open endpoint with this id, or null. */
    EndpointChannel endpoint(long id) {
        return endpoints.get(id);
    }

    /** The endpoint no longer waits to be matched: paired with its peer, failed or closed. */
    void endpointMatched(EndpointChannel ep) {
        match.remove(ep.remoteWorkerAddress().uuid(), ep.connSn(), ep);
    }

    /**
     * Its owner closes {@code ep}: a {@code connect} must not adopt it from now on (it would return an endpoint that
     * refuses every send), even before the close reaches the loop. Any thread.
     */
    void endpointClosing(EndpointChannel ep) {
        match.removeUnexpected(ep.remoteWorkerAddress().uuid(), ep.connSn(), ep);
    }

    /** {@code ep} ended; {@code saidGoodbye}: it closed gracefully, its EP_REMOVED on every lane. */
    void endpointClosed(EndpointChannel ep, boolean saidGoodbye) {
        if (saidGoodbye) {
            this.saidGoodbye.put(ep.endpointId(), new Peer(ep.remoteWorkerAddress().uuid(), ep.remoteEndpointId()));
        }
        endpoints.remove(ep.endpointId());
        endpointMatched(ep);
    }

    void lingering(EndpointChannel ep, boolean on) {
        if (on) {
            lingering.add(ep);
        } else {
            lingering.remove(ep);
        }
    }

    /** How long a graceful close waits for the peer, and a closing worker for lingering endpoints. */
    long closeWaitNanos() {
        return keepalive.timeoutNanos();
    }

    /** A lane was closed because of {@code cause}; the last few are kept for diagnostics. */
    /**
     * A lane failed (kept with the last 16). Returns whether to log it: at most {@link #LANE_WARNINGS_PER_SECOND} a
     * second, so a peer that churns bad connections cannot flood the log, nor the loop with writing it; the first
     * failure after a second with more says how many were not logged. Loop only.
     */
    boolean laneFailed(Throwable cause) {
        keepLast(laneFailures, cause);
        long now = System.nanoTime();
        if (now - laneWarningsSince >= TimeUnit.SECONDS.toNanos(1)) {
            if (laneWarningsSuppressed > 0) {
                LOG.warn("worker {}: {} more lane failures in the last second were not logged", name,
                        laneWarningsSuppressed);
            }
            laneWarningsSince = now;
            laneWarnings = 0;
            laneWarningsSuppressed = 0;
        }
        if (laneWarnings < LANE_WARNINGS_PER_SECOND) {
            laneWarnings++;
            return true;
        }
        laneWarningsSuppressed++;
        return false;
    }

    /** A read or write of a peer's memory failed at run time; the message went by RTR or RNDV_DATA instead. */
    void rmaFailed(String what, Throwable cause) {
        keepLast(rmaFailures, new WireupException(what + ": " + cause.getMessage(), cause));
    }

    private static void keepLast(Deque<Throwable> q, Throwable t) {
        q.addLast(t);
        while (q.size() > 16) {
            q.pollFirst();
        }
    }

    /**
     * {@code count} summed over the codecs of class {@code codec} of every endpoint, lingering ones included; on the
     * loop. For tests and diagnostics.
     */
    <C> int sumOverCodecs(Class<C> codec, ToIntFunction<C> count) {
        assert loop.inEventLoop();
        int n = 0;
        Set<EndpointChannel> all = new LinkedHashSet<>(endpoints.values());
        all.addAll(lingering);
        for (EndpointChannel ep : all) {
            for (ProtocolCodec c : ep.codecs()) {
                if (codec.isInstance(c)) {
                    n += count.applyAsInt(codec.cast(c));
                }
            }
        }
        return n;
    }

    /** The count of writes waiting in endpoints' stubs. */
    AtomicInteger pendingWrites() {
        return pendingWrites;
    }

    /** An endpoint completed wireup {@code nanos} after it was created. */
    void wiredUp(long nanos) {
        wireups.increment();
        wireupNanos.add(nanos);
    }

    /** An endpoint failed with {@code cause}. */
    void endpointFailed(Throwable cause) {
        endpointErrors.computeIfAbsent(cause.getClass().getSimpleName(), k -> new LongAdder())
                .increment();
    }

    /** Queue sizes toward {@code peerUuid}, {expected, unexpected}; for tests. */
    int[] matchQueueSizes(long peerUuid) {
        return match.sizes(peerUuid);
    }
}
