package io.nucx.protocol;

import io.nucx.transport.rma.RmaLane;

/**
 * One RMA lane of an endpoint as the protocols use it (UCX's RMA_BW lane): the lane, which device of each worker it
 * joins, and its share of a split transfer. A key registered on this side's device is tagged with {@code localEntry}
 * ({@link KeyBundle}); the peer's key for this lane is the one tagged with {@code remoteEntry}.
 *
 * @param lane        the connected lane
 * @param localEntry  this worker's address entry (device) the lane leaves from
 * @param remoteEntry the peer's address entry (device) it reaches
 * @param bandwidth   bytes/second both ends can give (the smaller; both peers see the same figure)
 * @param name        "transport/device", for tables, counters and errors
 */
public record RmaRail(RmaLane lane, int localEntry, int remoteEntry, double bandwidth, String name) {
}
