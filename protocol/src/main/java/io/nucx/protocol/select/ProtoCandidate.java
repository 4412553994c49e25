package io.nucx.protocol.select;

/**
 * One probed protocol instance.
 *
 * @param protocol    the protocol
 * @param cfgThresh   user threshold: {@link #AUTO}, {@link #DISABLED}, or the size from which the protocol is forced
 * @param cfgPriority which forced protocol wins when several are forced (higher wins)
 * @param perf        its cost over sizes
 * @param config      what the table prints in its Config column (lanes)
 * @param autoForcedFrom with {@code cfgThresh} {@link #AUTO}: the size from which the protocol is forced all the same,
 *                    cost deciding below it (a rendezvous above NUCX_EAGER_MAX), or {@link #NEVER}
 */
public record ProtoCandidate(Protocol protocol, long cfgThresh, int cfgPriority, ProtoPerf perf, String config,
                             long autoForcedFrom) {
    /** No user threshold: cost decides. */
    public static final long AUTO = -1;
    /** Never selected. */
    public static final long DISABLED = Long.MAX_VALUE;
    /** For {@link #autoForcedFrom}: cost decides at every size. */
    public static final long NEVER = Long.MAX_VALUE;

    /** A candidate whose automatic threshold leaves every size to cost. */
    public ProtoCandidate(Protocol protocol, long cfgThresh, int cfgPriority, ProtoPerf perf, String config) {
        this(protocol, cfgThresh, cfgPriority, perf, config, NEVER);
    }
}
