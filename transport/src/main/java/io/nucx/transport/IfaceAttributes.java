package io.nucx.transport;

import java.util.EnumSet;
import java.util.Set;

/**
 * What an iface can do and what it costs, as UCT's {@code uct_iface_attr_t}: capability flags, size limits per
 * operation, and the performance model the lane and protocol selection use.
 *
 * @param capabilities    capability flags
 * @param maxShort        largest AM_SHORT payload (header included), bytes
 * @param maxBcopy        largest AM_BCOPY payload of one frame (header included), bytes
 * @param maxHeader       largest active-message header, bytes
 * @param latencySeconds  latency constant {@code c} of {@code c + m * numEps}, seconds
 * @param latencyPerEp    latency growth {@code m} per endpoint, seconds
 * @param bandwidthDedicated bytes/second this iface has to itself
 * @param bandwidthShared bytes/second shared with other processes on the device
 * @param overheadSeconds CPU time to send or receive one message, seconds
 * @param priority        tie-breaker between equal scores (higher wins)
 * @param maxZcopy        largest PUT/GET zero-copy transfer, bytes (0 without PUT_ZCOPY/GET_ZCOPY)
 */
public record IfaceAttributes(Set<Capability> capabilities, int maxShort, int maxBcopy, int maxHeader,
                              double latencySeconds, double latencyPerEp, double bandwidthDedicated,
                              double bandwidthShared, double overheadSeconds, int priority, long maxZcopy) {

    /** Attributes of an iface without zero-copy RMA. */
    public IfaceAttributes(Set<Capability> capabilities, int maxShort, int maxBcopy, int maxHeader,
                           double latencySeconds, double latencyPerEp, double bandwidthDedicated,
                           double bandwidthShared, double overheadSeconds, int priority) {
        this(capabilities, maxShort, maxBcopy, maxHeader, latencySeconds, latencyPerEp, bandwidthDedicated,
                bandwidthShared, overheadSeconds, priority, 0);
    }

    public IfaceAttributes {
        capabilities = capabilities.isEmpty() ? EnumSet.noneOf(Capability.class) : EnumSet.copyOf(capabilities);
    }

    public boolean has(Capability c) {
        return capabilities.contains(c);
    }

    /** The same attributes with the AM size limits narrowed, e.g. to the smaller of two peers' limits. */
    public IfaceAttributes withAmLimits(int maxShort, int maxBcopy) {
        return new IfaceAttributes(capabilities, maxShort, maxBcopy, maxHeader, latencySeconds, latencyPerEp,
                bandwidthDedicated, bandwidthShared, overheadSeconds, priority, maxZcopy);
    }

    /** Bandwidth as UCX's v2 model uses it: dedicated + shared / min(ppn, 8), with one process per node here. */
    public double bandwidth() {
        return bandwidthDedicated + bandwidthShared;
    }
}
