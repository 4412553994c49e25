package io.nucx.protocol.select;

import io.nucx.protocol.EndpointConfig;

/**
 * What a probe sees: the endpoint's lanes, the selection key, and the user thresholds.
 *
 * @param bcopyThresh {@code NUCX_BCOPY_THRESH}: {@link ProtoCandidate#AUTO} or a size
 * @param rndvThresh  {@code NUCX_RNDV_THRESH}: {@link ProtoCandidate#AUTO} or a size
 * @param copyBandwidth memcpy bandwidth used for copy costs, bytes/s (UCX_BCOPY_BW, 7000 MB/s by default in v2)
 * @param zcopyThresh {@code NUCX_ZCOPY_THRESH}: {@link ProtoCandidate#AUTO}, a size, or
 *                    {@link ProtoCandidate#DISABLED} ("inf")
 */
public record ProbeParams(EndpointConfig endpoint, long key, long bcopyThresh, long rndvThresh,
                          double copyBandwidth, long zcopyThresh) {
    /** UCX protocols v2's auto memcpy bandwidth. */
    public static final double DEFAULT_COPY_BANDWIDTH = 7000e6;

    /** With no zero-copy threshold of the user's: cost decides. */
    public ProbeParams(EndpointConfig endpoint, long key, long bcopyThresh, long rndvThresh, double copyBandwidth) {
        this(endpoint, key, bcopyThresh, rndvThresh, copyBandwidth, ProtoCandidate.AUTO);
    }
}
