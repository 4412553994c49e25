package io.nucx.protocol.select;

import io.nucx.protocol.EndpointConfig;
import io.nucx.transport.IfaceAttributes;

/**
 * What a probe sees: the endpoint's lanes, the selection key, and the user thresholds.
 *
 * @param bcopyThresh {@code NUCX_BCOPY_THRESH}: {@link ProtoCandidate#AUTO} or a size
 * @param rndvThresh  {@code NUCX_RNDV_THRESH}: {@link ProtoCandidate#AUTO} or a size
 * @param copyBandwidth memcpy bandwidth used for copy costs, bytes/s (UCX_BCOPY_BW, 7000 MB/s by default in v2), on
 *                      lanes that state no copy rate of their own ({@link #copyBandwidth(IfaceAttributes)})
 * @param zcopyThresh {@code NUCX_ZCOPY_THRESH}: {@link ProtoCandidate#AUTO}, a size, or
 *                    {@link ProtoCandidate#DISABLED} ("inf")
 * @param eagerMax    {@code NUCX_EAGER_MAX}: with {@code rndvThresh} automatic, the rendezvous protocols are forced
 *                    from the next size on ({@link #rndvAutoForcedFrom}); {@link ProtoCandidate#NEVER}: no bound
 */
public record ProbeParams(EndpointConfig endpoint, long key, long bcopyThresh, long rndvThresh,
                          double copyBandwidth, long zcopyThresh, long eagerMax) {
    /** UCX protocols v2's auto memcpy bandwidth. */
    public static final double DEFAULT_COPY_BANDWIDTH = 7000e6;

    /**
     * The rate copies into and out of {@code lane}'s memory are charged at: the lane's own when it states one (shm: its
     * payloads move by those two copies), else {@link #copyBandwidth}.
     */
    public double copyBandwidth(IfaceAttributes lane) {
        return lane.copiesAreTheTransfer() ? lane.copyBandwidth() : copyBandwidth;
    }

    /** With no zero-copy threshold of the user's: cost decides. */
    public ProbeParams(EndpointConfig endpoint, long key, long bcopyThresh, long rndvThresh, double copyBandwidth) {
        this(endpoint, key, bcopyThresh, rndvThresh, copyBandwidth, ProtoCandidate.AUTO);
    }

    /** With no bound on eager sizes: cost decides at every size. */
    public ProbeParams(EndpointConfig endpoint, long key, long bcopyThresh, long rndvThresh, double copyBandwidth,
                       long zcopyThresh) {
        this(endpoint, key, bcopyThresh, rndvThresh, copyBandwidth, zcopyThresh, ProtoCandidate.NEVER);
    }

    /**
     * The size from which a rendezvous protocol is forced though NUCX_RNDV_THRESH is automatic: the one after
     * {@link #eagerMax}; {@link ProtoCandidate#NEVER} with a threshold of the user's or no bound.
     */
    public long rndvAutoForcedFrom() {
        return rndvThresh == ProtoCandidate.AUTO && eagerMax < ProtoCandidate.NEVER - 1 ? eagerMax + 1
                : ProtoCandidate.NEVER;
    }
}
