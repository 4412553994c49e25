package io.nucx.examples.perf;

import java.util.Arrays;
import java.util.Map;

/**
 * ucx_perftest's {@code -D}: the send datatype ({@code contig}, {@code iov}) and, as its UCT tests name them, the
 * eager protocol family. For nucx {@code bcopy} forbids the eager zero-copy protocols for the run
 * (NUCX_ZCOPY_THRESH=inf) and {@code zcopy} forces them wherever they are offered (NUCX_ZCOPY_THRESH=0: tcp lanes,
 * native memory, messages over 1 KiB; rendezvous still takes over where it is cheaper, and elsewhere the table's
 * choice stands). Both sides of a run apply the same setting; it overrides NUCX_ZCOPY_THRESH from the environment.
 */
public enum PerfDatatype {
    CONTIG("contig", "(automatic)", Map.of()),
    IOV("iov", "iov", Map.of()),
    BCOPY("bcopy", "bcopy", Map.of("ZCOPY_THRESH", "inf")),
    ZCOPY("zcopy", "zcopy", Map.of("ZCOPY_THRESH", "0"));

    private final String name;
    private final String layout;
    private final Map<String, String> settings;

    PerfDatatype(String name, String layout, Map<String, String> settings) {
        this.name = name;
        this.layout = layout;
        this.settings = settings;
    }

    /** What {@code -D} takes and the set-up line carries. */
    public String optionName() {
        return name;
    }

    /** The banner's "Data layout" value. */
    public String layout() {
        return layout;
    }

    /** Worker settings (NUCX_* names without the prefix) the run adds on both sides. */
    public Map<String, String> settings() {
        return settings;
    }

    /** The send buffer is a two-part composite, so the selection key says IOV. */
    public boolean iov() {
        return this == IOV;
    }

    /** @throws IllegalArgumentException naming the value and every known one */
    public static PerfDatatype of(String name) {
        return Arrays.stream(values()).filter(d -> d.name.equals(name)).findFirst().orElseThrow(() ->
                new IllegalArgumentException("unknown datatype '" + name + "' (" + String.join(" | ",
                        Arrays.stream(values()).map(PerfDatatype::optionName).toList()) + ")"));
    }
}
