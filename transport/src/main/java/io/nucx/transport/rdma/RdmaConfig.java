package io.nucx.transport.rdma;

import io.nucx.transport.config.AbstractConfigTable;
import io.nucx.transport.config.ConfigEntry;

/** The rdma transport's settings ({@code NUCX_VERBS_LIB}, {@code NUCX_RDMA_*}). */
public final class RdmaConfig extends AbstractConfigTable {

    /** The verbs library the rdma transport binds: the system's, or a stand-in such as nucx's test emulator. */
    public static final ConfigEntry<String> VERBS_LIB = ConfigEntry.string("VERBS_LIB", "libibverbs.so.1",
            "Verbs library the rdma transport loads: a soname or a path (the system's libibverbs.so.1 by default)")
            .require(v -> !v.isBlank(), "must name a library");
    /** Largest active message one rdma SEND carries; each receive buffer has this size. */
    public static final ConfigEntry<Long> SEG_SIZE = ConfigEntry.size("RDMA_SEG_SIZE", "8k",
            "Largest active-message frame of one rdma SEND, header included; the size of each receive buffer",
            1024, 1 << 20);
    /** Receives each rdma lane keeps posted: the credits its peer starts with. */
    public static final ConfigEntry<Integer> RX_DEPTH = ConfigEntry.integer("RDMA_RX_DEPTH", "128",
            "Receive buffers each rdma lane keeps posted, the peer's send credits", 16, 4096);

    static final RdmaConfig TABLE = new RdmaConfig();

    public RdmaConfig() {
        super("rdma transport", RANK_TRANSPORT, VERBS_LIB, SEG_SIZE, RX_DEPTH);
    }
}
