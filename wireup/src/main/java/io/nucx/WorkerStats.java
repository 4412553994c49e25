package io.nucx;

import io.nucx.protocol.ProtocolCounters;

import java.util.Map;

/**
 * A worker's numbers, readable from any thread (for {@link WorkerMetrics} and dashboards). Counts are exact; gauges of
 * loop-confined state are read without stopping the loop, so they may lag it by a moment.
 */
public interface WorkerStats {

    /** Messages and bytes each protocol sent over each transport, and named events (fallbacks, failovers...). */
    ProtocolCounters counters();

    /** Endpoints open now. */
    int openEndpoints();

    /** Messages that arrived and wait for a receive. */
    int unexpectedMessages();

    /** Rendezvous sends and receives in progress. */
    int rendezvousInFlight();

    /** Writes waiting in endpoints that are still wiring up. */
    int pendingWrites();

    /** Endpoints that completed wireup, and the total time they took (from creation to the peer's answer). */
    long wireups();

    long wireupNanos();

    /** Endpoints that failed, by the simple name of the failure's class (ConnectionResetException, ...). */
    Map<String, Long> endpointErrors();
}
