package io.nucx.wireup;

import io.nucx.protocol.AmIds;
import io.nucx.transport.AmFrame;

import java.util.List;

/**
 * Which lane an endpoint's next frame goes on (Netty's {@code StreamByteDistributor} plays this part for HTTP/2
 * streams). Every frame goes on the AM lane, in order, except RNDV_DATA: rendezvous fragments carry their offset, so
 * they may arrive in any order, and are spread over every live lane in proportion to its bandwidth, each fragment to
 * the lane whose assigned bytes per unit of bandwidth are lowest. Loop only.
 */
final class LaneDistributor {

    /** The lane for {@code frame}, given the lane now carrying active messages. */
    Lane next(List<Lane> lanes, Lane am, AmFrame frame) {
        if (frame.amId() != AmIds.RNDV_DATA || lanes.size() == 1) {
            return am;
        }
        int bytes = frame.payload().readableBytes();
        Lane best = null;
        for (Lane l : lanes) {
            if (l.live() && (best == null || l.load + bytes / l.bandwidth < best.load + bytes / best.bandwidth)) {
                best = l;
            }
        }
        if (best == null) {
            return am;
        }
        best.load += bytes / best.bandwidth;
        return best;
    }

    /** A lane that joins late starts at the least load, so it does not take every fragment until it catches up. */
    void joined(List<Lane> lanes, Lane joined) {
        double least = Double.MAX_VALUE;
        for (Lane l : lanes) {
            if (l != joined && l.live()) {
                least = Math.min(least, l.load);
            }
        }
        joined.load = least == Double.MAX_VALUE ? 0 : least;
    }
}
