package io.nucx.transport.cma;

import io.nucx.transport.NucxConfig;
import io.nucx.transport.config.AbstractConfigTable;
import io.nucx.transport.config.ConfigEntry;

import java.util.List;

/** The cma transport's settings ({@code NUCX_CMA_*}). */
public final class CmaConfig extends AbstractConfigTable {

    /** What the memory a cma read takes is, for the cost model ({@link CmaIface#forFreshData}). */
    public enum Data {
        /** Written by its owner since the last read: the read pays for bringing the lines over and back. */
        FRESH,
        /** Sent again unchanged: the read's own rate. */
        SAME
    }

    /** How the cost model prices a cma read without a NUCX_PERF_PROFILE. */
    public static final ConfigEntry<Data> DATA = ConfigEntry.choice("CMA_DATA", "fresh",
            "What the cost model assumes of the memory a cma read takes (no NUCX_PERF_PROFILE; a profile's own "
                    + "figures say it there): fresh (its owner wrote it since the last read, as an application "
                    + "writes its next message: the read also pays for the owner's core handing the lines over and "
                    + "taking them back, at the rate measured for the ring's hand-off) | same (a buffer sent again "
                    + "unchanged, as ucx_perftest sends: the read's own rate, measured at start)",
            List.of(Data.values()));

    static final CmaConfig TABLE = new CmaConfig();

    /** Whether {@code config} prices cma's read for fresh data ({@link #DATA}, the default). */
    public static boolean pricesFreshData(NucxConfig config) {
        return config.get(DATA) == Data.FRESH;
    }

    public CmaConfig() {
        super("cma transport", RANK_TRANSPORT, DATA);
    }
}
