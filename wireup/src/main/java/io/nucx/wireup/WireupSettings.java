package io.nucx.wireup;

import io.nucx.ErrorMode;
import io.nucx.protocol.ReceiveLimits;
import io.nucx.transport.NucxConfig;

/**
 * The wireup layer's settings, parsed once when a worker starts.
 *
 * @param errorMode              error handling of new endpoints (NUCX_ERR_MODE)
 * @param bwLimits               how many message lanes an endpoint may use and how slow the slowest may be
 *                               (NUCX_MAX_RNDV_LANES, NUCX_MULTI_LANE_MAX_RATIO)
 * @param keepaliveIntervalNanos NUCX_KEEPALIVE_INTERVAL, Long.MAX_VALUE for none
 * @param keepaliveTimeoutNanos  NUCX_KEEPALIVE_TIMEOUT; also how long a graceful close waits for the peer
 * @param receiveLimits          NUCX_RX_EP_BYTES, NUCX_RX_WORKER_BYTES, NUCX_REPLY_BACKLOG
 * @param stubEndpointBytes      NUCX_STUB_EP_BYTES: writes one endpoint queues while wiring up
 * @param stubWorkerBytes        NUCX_STUB_WORKER_BYTES: the same over all endpoints of the worker
 * @param wireupTimeoutNanos     NUCX_WIREUP_TIMEOUT: a connection a peer opened must carry its wireup within it
 * @param maxEndpoints           NUCX_MAX_ENDPOINTS: endpoints created for peers' REQUESTs at once
 */
record WireupSettings(ErrorMode errorMode, LaneSelector.BwLimits bwLimits, long keepaliveIntervalNanos,
                      long keepaliveTimeoutNanos, ReceiveLimits receiveLimits, long stubEndpointBytes,
                      long stubWorkerBytes, long wireupTimeoutNanos, int maxEndpoints) {

    static WireupSettings from(NucxConfig config) {
        ErrorMode mode = switch (config.choice(NucxConfig.ERR_MODE, "peer", "failover", "none")) {
            case "peer" -> ErrorMode.PEER;
            case "failover" -> ErrorMode.FAILOVER;
            default -> ErrorMode.NONE;
        };
        return new WireupSettings(mode, new LaneSelector.BwLimits(config.integer(NucxConfig.MAX_RNDV_LANES, 1, 8),
                config.decimal(NucxConfig.MULTI_LANE_MAX_RATIO, 1, 1000)), config.keepaliveIntervalNanos(),
                config.keepaliveTimeoutNanos(),
                new ReceiveLimits(config.memunits(NucxConfig.RX_EP_BYTES, 64 << 10, Long.MAX_VALUE / 2),
                        config.memunits(NucxConfig.RX_WORKER_BYTES, 64 << 10, Long.MAX_VALUE / 2),
                        config.integer(NucxConfig.REPLY_BACKLOG, 1, 1 << 20)),
                config.memunits(NucxConfig.STUB_EP_BYTES, 64 << 10, Long.MAX_VALUE / 2),
                config.memunits(NucxConfig.STUB_WORKER_BYTES, 64 << 10, Long.MAX_VALUE / 2),
                config.wireupTimeoutNanos(), config.integer(NucxConfig.MAX_ENDPOINTS, 1, 1 << 24));
    }
}
