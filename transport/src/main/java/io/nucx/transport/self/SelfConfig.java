package io.nucx.transport.self;

import io.nucx.transport.config.AbstractConfigTable;
import io.nucx.transport.config.ConfigEntry;

/** The self transport's settings ({@code NUCX_SELF_*}). */
public final class SelfConfig extends AbstractConfigTable {

    /** Bytes of frames a self channel's receiver may hold before its writer sees backpressure (its ring apart). */
    public static final ConfigEntry<Long> QUEUE_BYTES = ConfigEntry.size("SELF_QUEUE_BYTES", "1m",
            "Bytes of frames a self (in-process) channel's receiver may hold before the writer stops; short messages "
                    + "and frames of at most 1 KiB of payload fill a ring of their own, of this size or 64 KiB, "
                    + "whichever is less", 4096, 1L << 30);

    static final SelfConfig TABLE = new SelfConfig();

    public SelfConfig() {
        super("self transport", RANK_TRANSPORT, QUEUE_BYTES);
    }
}
