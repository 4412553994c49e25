package io.nucx.wireup;

import io.nucx.ErrorMode;
import io.nucx.protocol.ProtocolConfig;
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
 * @param laneBatch              NUCX_LANE_BATCH: frames a lane handles per loop turn
 */
record WireupSettings(ErrorMode errorMode, LaneSelector.BwLimits bwLimits, long keepaliveIntervalNanos,
                      long keepaliveTimeoutNanos, ReceiveLimits receiveLimits, long stubEndpointBytes,
                      long stubWorkerBytes, long wireupTimeoutNanos, int maxEndpoints, int laneBatch) {

    static WireupSettings from(NucxConfig config) {
        return new WireupSettings(config.get(WireupConfig.ERR_MODE), new LaneSelector.BwLimits(
                config.get(WireupConfig.MAX_RNDV_LANES), config.get(WireupConfig.MULTI_LANE_MAX_RATIO)),
                config.get(WireupConfig.KEEPALIVE_INTERVAL), config.get(WireupConfig.KEEPALIVE_TIMEOUT),
                new ReceiveLimits(config.get(ProtocolConfig.RX_EP_BYTES), config.get(ProtocolConfig.RX_WORKER_BYTES),
                        config.get(ProtocolConfig.REPLY_BACKLOG)),
                config.get(WireupConfig.STUB_EP_BYTES), config.get(WireupConfig.STUB_WORKER_BYTES),
                config.get(WireupConfig.WIREUP_TIMEOUT), config.get(WireupConfig.MAX_ENDPOINTS),
                config.get(WireupConfig.LANE_BATCH));
    }
}
