package io.nucx.protocol.select;

/**
 * One probed protocol instance.
 *
 * @param protocol    the protocol
 * @param cfgThresh   user threshold: {@link #AUTO}, {@link #DISABLED}, or the size from which the protocol is forced
 * @param cfgPriority which forced protocol wins when several are forced (higher wins)
 * @param perf        its cost over sizes
 * @param config      what the table prints in its Config column (lanes)
 */
public record ProtoCandidate(Protocol protocol, long cfgThresh, int cfgPriority, ProtoPerf perf, String config) {
    /** No user threshold: cost decides. */
    public static final long AUTO = -1;
    /** Never selected. */
    public static final long DISABLED = Long.MAX_VALUE;
}
