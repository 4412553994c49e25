package io.nucx.protocol;

import io.netty.buffer.ByteBufAllocator;
import io.netty.util.concurrent.EventExecutor;
import io.nucx.protocol.am.AmHandlerTable;
import io.nucx.protocol.amo.MemoryRegistry;
import io.nucx.protocol.select.PerfProfile;
import io.nucx.protocol.select.ProbeParams;
import io.nucx.protocol.select.SelectionCache;
import io.nucx.protocol.select.SelectionKey;
import io.nucx.protocol.tag.TagMatcher;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A worker's protocol state that its endpoints' codecs share: tag matching, the protocol tables of each endpoint
 * configuration, memory registered for peers' atomics, message ids, counters. Everything but the counters, the
 * memory registry, the active-message handlers and the table cache map is confined to the worker's loop.
 */
public final class WorkerProtocols {

    private record CacheKey(EndpointConfig config, SelectionKey.Locality locality) {
    }

    private final EventExecutor loop;
    private final ByteBufAllocator alloc;
    private final ProtocolSettings settings;
    private final ProtocolCounters counters;
    private final TagMatcher matcher;
    private final MemoryRegistry memory;
    private final AmHandlerTable amHandlers = new AmHandlerTable();
    private final ReceiveLimits limits;
    /** Receive memory held for peers, over all endpoints (NUCX_RX_WORKER_BYTES). Loop only. */
    private final MemoryBudget receivePool;
    private final Map<CacheKey, SelectionCache> selectionCaches = new ConcurrentHashMap<>();
    /** Rendezvous sends and receives in progress on every endpoint, for metrics. */
    private final AtomicInteger rndvInFlight = new AtomicInteger();
    /** Seeded at random so message ids differ between workers (UCX's am_message_id). Loop only. */
    private long nextMessageId = ThreadLocalRandom.current().nextLong();

    public WorkerProtocols(EventExecutor loop, ByteBufAllocator alloc, ProtocolSettings settings, long workerUuid,
                           ProtocolCounters counters) {
        this(loop, alloc, settings, workerUuid, counters, ReceiveLimits.NONE);
    }

    public WorkerProtocols(EventExecutor loop, ByteBufAllocator alloc, ProtocolSettings settings, long workerUuid,
                           ProtocolCounters counters, ReceiveLimits limits) {
        this.limits = limits;
        this.receivePool = MemoryBudget.worker(ReceiveLimits.WORKER_BYTES, limits.workerBytes());
        this.loop = loop;
        this.alloc = alloc;
        this.settings = settings;
        this.counters = counters;
        this.matcher = new TagMatcher(loop);
        this.memory = new MemoryRegistry(workerUuid);
    }

    public EventExecutor loop() {
        return loop;
    }

    public ByteBufAllocator alloc() {
        return alloc;
    }

    public ProtocolSettings settings() {
        return settings;
    }

    public ProtocolCounters counters() {
        return counters;
    }

    /** The worker's tag matching: posted receives and unexpected arrivals of every endpoint. */
    public TagMatcher matcher() {
        return matcher;
    }

    /** Memory this worker's peers may run atomics on. */
    public MemoryRegistry memory() {
        return memory;
    }

    /** The worker's active-message handlers by id (set from any thread). */
    public AmHandlerTable amHandlers() {
        return amHandlers;
    }

    public ReceiveLimits limits() {
        return limits;
    }

    /** A new endpoint's receive budget (NUCX_RX_EP_BYTES), inside the worker's (NUCX_RX_WORKER_BYTES). */
    public MemoryBudget newEndpointBudget() {
        return receivePool.endpoint(ReceiveLimits.EP_BYTES, limits.endpointBytes());
    }

    /** Receive memory held for peers now, over all endpoints; loop only. */
    public long receiveMemoryHeld() {
        return receivePool.used();
    }

    /** Rendezvous sends and receives in progress on every endpoint of this worker (any thread may read it). */
    public AtomicInteger rndvInFlight() {
        return rndvInFlight;
    }

    /** The next id for a multi-fragment message, unique per sender. Loop only. */
    public long nextMessageId() {
        return nextMessageId++;
    }

    /**
     * The protocol tables of an endpoint configuration, shared by every endpoint of this worker with an equal one.
     * Their cost model sees the lanes with the performance profile's figures where it has them (NUCX_PERF_PROFILE).
     * With NUCX_PROTO_INFO each new table is printed to standard output, as UCX_PROTO_INFO does.
     */
    public SelectionCache selectionCache(EndpointConfig config, SelectionKey.Locality locality) {
        PerfProfile profile = settings.profile();
        return selectionCaches.computeIfAbsent(new CacheKey(config, locality), k -> new SelectionCache(
                settings.protocols(), profile.apply(config), locality, settings.bcopyThresh(), settings.zcopyThresh(),
                settings.rndvThresh(), settings.eagerMax(),
                profile.copyBandwidth(ProbeParams.DEFAULT_COPY_BANDWIDTH),
                settings.protoInfo() ? System.out::print : null));
    }
}
