package io.nucx;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.FunctionTimer;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.BaseUnits;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.micrometer.core.instrument.binder.netty4.NettyAllocatorMetrics;
import io.micrometer.core.instrument.binder.netty4.NettyEventExecutorMetrics;
import io.netty.buffer.ByteBufAllocatorMetricProvider;
import io.netty.buffer.PooledByteBufAllocator;
import io.nucx.protocol.ProtocolCounters;
import io.nucx.protocol.tag.RndvProtocols;

import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Publishes a worker's numbers to Micrometer ({@code new WorkerMetrics(worker).bindTo(registry)}). Names are
 * {@code nucx.*}, in base units, with low-cardinality tags only (the worker's name, protocol, transport, cause; never
 * endpoint ids):
 * <table>
 *   <caption>meters</caption>
 *   <tr><td>{@code nucx.messages.sent}</td><td>counter</td><td>messages sent, by protocol (the protocol selected for
 *       each) and transport</td></tr>
 *   <tr><td>{@code nucx.data.sent}</td><td>counter, bytes</td><td>their payload bytes, same tags (Prometheus:
 *       {@code nucx_data_sent_bytes_total})</td></tr>
 *   <tr><td>{@code nucx.wireup}</td><td>timer</td><td>endpoint creation to the peer's answer</td></tr>
 *   <tr><td>{@code nucx.endpoints}</td><td>gauge</td><td>endpoints open</td></tr>
 *   <tr><td>{@code nucx.pending.writes}</td><td>gauge</td><td>writes waiting for their endpoint's wireup</td></tr>
 *   <tr><td>{@code nucx.unexpected.messages}</td><td>gauge</td><td>messages waiting for a receive</td></tr>
 *   <tr><td>{@code nucx.rendezvous.in.flight}</td><td>gauge</td><td>rendezvous sends and receives in progress</td></tr>
 *   <tr><td>{@code nucx.endpoint.errors}</td><td>counter</td><td>endpoints failed, by cause</td></tr>
 *   <tr><td>{@code nucx.lane.failovers}, {@code nucx.lane.resent}</td><td>counter</td><td>lanes lost and taken over;
 *       frames sent again</td></tr>
 *   <tr><td>{@code nucx.rendezvous.fallbacks}</td><td>counter</td><td>rendezvous that could not use RMA, or went
 *       eager (an active message's user header fills the RTS), by kind</td></tr>
 * </table>
 * Plus Micrometer's own Netty meters for the worker's event loop and the pooled allocator. Nothing here runs on the
 * send or receive path: counting is done anyway (a {@code LongAdder} add per message), and these functions read it
 * when the registry publishes; a protocol first used over a transport is registered then, once.
 */
public final class WorkerMetrics implements MeterBinder {

    private final Worker worker;
    private final Tags tags;

    public WorkerMetrics(Worker worker) {
        this.worker = worker;
        this.tags = Tags.of("worker", worker.name());
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        WorkerStats stats = worker.stats();
        ProtocolCounters counters = stats.counters();
        counters.onTraffic(t -> {
            Tags traffic = tags.and("protocol", t.protocol(), "transport", t.transport());
            FunctionCounter.builder("nucx.messages.sent", t, ProtocolCounters.Traffic::messages).tags(traffic)
                    .description("messages sent, by the protocol selected for each").register(registry);
            FunctionCounter.builder("nucx.data.sent", t, ProtocolCounters.Traffic::bytes).tags(traffic)
                    .baseUnit(BaseUnits.BYTES).description("payload bytes sent").register(registry);
        });
        FunctionTimer.builder("nucx.wireup", stats, WorkerStats::wireups, WorkerStats::wireupNanos,
                TimeUnit.NANOSECONDS).tags(tags).description("endpoint creation to the peer's answer")
                .register(registry);
        Gauge.builder("nucx.endpoints", stats, WorkerStats::openEndpoints).tags(tags).register(registry);
        Gauge.builder("nucx.pending.writes", stats, WorkerStats::pendingWrites).tags(tags)
                .description("writes waiting for their endpoint's wireup").register(registry);
        Gauge.builder("nucx.unexpected.messages", stats, WorkerStats::unexpectedMessages).tags(tags)
                .description("messages waiting for a receive").register(registry);
        Gauge.builder("nucx.rendezvous.in.flight", stats, WorkerStats::rendezvousInFlight).tags(tags)
                .register(registry);
        for (String cause : List.of("ConnectionResetException", "EndpointTimeoutException", "EndpointException")) {
            FunctionCounter.builder("nucx.endpoint.errors", stats, s -> s.endpointErrors().getOrDefault(cause, 0L))
                    .tags(tags.and("cause", cause)).register(registry);
        }
        FunctionCounter.builder("nucx.lane.failovers", counters, c -> c.count("lane/failover")).tags(tags)
                .register(registry);
        FunctionCounter.builder("nucx.lane.resent", counters, c -> c.count("lane/resent")).tags(tags)
                .description("frames sent again after a lane was lost").register(registry);
        for (String kind : List.of(RndvProtocols.GET_FALLBACK_COUNTER, RndvProtocols.RECV_GET_FALLBACK_COUNTER,
                RndvProtocols.PUT_FALLBACK_COUNTER, RndvProtocols.RECV_PUT_FALLBACK_COUNTER,
                RndvProtocols.AM_HEADER_FALLBACK_COUNTER)) {
            FunctionCounter.builder("nucx.rendezvous.fallbacks", counters, c -> c.count(kind))
                    .tags(tags.and("kind", kind)).register(registry);
        }
        new NettyEventExecutorMetrics(worker.eventLoop()).bindTo(registry);
        if (PooledByteBufAllocator.DEFAULT instanceof ByteBufAllocatorMetricProvider allocator) {
            new NettyAllocatorMetrics(allocator).bindTo(registry);
        }
    }
}
