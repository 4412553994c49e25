package io.nucx.wireup;

import io.nucx.ErrorMode;
import io.nucx.transport.NucxConfig;

/**
 * The wireup layer's settings, parsed once when a worker starts.
 *
 * @param errorMode              error handling of new endpoints (NUCX_ERR_MODE)
 * @param bwLimits               how many message lanes an endpoint may use and how slow the slowest may be
 *                               (NUCX_MAX_RNDV_LANES, NUCX_MULTI_LANE_MAX_RATIO)
 * @param keepaliveIntervalNanos NUCX_KEEPALIVE_INTERVAL, Long.MAX_VALUE for none
 * @param keepaliveTimeoutNanos  NUCX_KEEPALIVE_TIMEOUT; also how long a graceful close waits for the peer
 */
record WireupSettings(ErrorMode errorMode, LaneSelector.BwLimits bwLimits, long keepaliveIntervalNanos,
                      long keepaliveTimeoutNanos) {

    static WireupSettings from(NucxConfig config) {
        return new WireupSettings(config.get(WireupConfig.ERR_MODE), new LaneSelector.BwLimits(
                config.get(WireupConfig.MAX_RNDV_LANES), config.get(WireupConfig.MULTI_LANE_MAX_RATIO)),
                config.get(WireupConfig.KEEPALIVE_INTERVAL), config.get(WireupConfig.KEEPALIVE_TIMEOUT));
    }
}
