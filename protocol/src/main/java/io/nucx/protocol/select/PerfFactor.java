package io.nucx.protocol.select;

/** What a part of a protocol's time is spent on (UCX's {@code ucp_proto_perf_factor_id_t}). */
public enum PerfFactor {
    /** Sender CPU: send overheads, copies, registration. */
    LOCAL_CPU("cpu"),
    /** Receiver CPU: receive overhead, receive-side copy or registration. */
    REMOTE_CPU("cpu-remote"),
    /** Local wire time: bytes / bandwidth. */
    LOCAL_TL("tl"),
    /** Remote-driven wire time (the peer pulls). */
    REMOTE_TL("tl-remote"),
    /** Fixed network latency; never overlapped. */
    LATENCY("lat");

    private final String label;

    PerfFactor(String label) {
        this.label = label;
    }

    public String label() {
        return label;
    }

    /** The same factor seen from the peer (local and remote swapped). */
    public PerfFactor remote() {
        return switch (this) {
            case LOCAL_CPU -> REMOTE_CPU;
            case REMOTE_CPU -> LOCAL_CPU;
            case LOCAL_TL -> REMOTE_TL;
            case REMOTE_TL -> LOCAL_TL;
            case LATENCY -> LATENCY;
        };
    }
}
