package io.nucx.examples.perf;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The worker settings that make one protocol carry every message it can send, whatever the cost model thinks: "the
 * protocol forced by hand" a sweep compares the engine's own choice with. Only the user's knobs are used, as a person
 * would (UCX's {@code UCX_PROTOS} and thresholds; nucx's {@code NUCX_PROTOS}, {@code NUCX_ZCOPY_THRESH},
 * {@code NUCX_RNDV_THRESH}, {@code NUCX_RNDV_SCHEME}), on both sides of a run:
 * <ul>
 *   <li>a protocol that covers every size from 0 up to its limit, heap memory too (eager short, the copy protocols,
 *       tag/rndv): {@code NUCX_PROTOS} names it alone;</li>
 *   <li>the eager zero-copy protocols: {@code NUCX_PROTOS} names it and {@code egr/multi/bcopy} (for what it cannot
 *       send: heap memory, small control messages), and {@code NUCX_ZCOPY_THRESH=0} makes it win (priority 30 over
 *       the copy protocols' 20) wherever it runs;</li>
 *   <li>the RMA rendezvous variants: the same with {@code NUCX_RNDV_THRESH=0} (priority 60), and for
 *       {@code rndv/put/zcopy} the scheme that makes receivers offer their buffers.</li>
 * </ul>
 * A sweep checks each forced run against the client's protocol counters, so a setting that did not force what it
 * names shows instead of passing as a measurement of it.
 */
public final class ForcedProtocol {

    /** What takes the messages a forced protocol cannot send (zero-copy and RMA ones: heap memory, 0 bytes). */
    static final String FALLBACK = "egr/multi/bcopy";

    private static final List<String> ALONE = List.of("egr/short", "egr/single/bcopy", "egr/multi/bcopy",
            "tag/rndv", "egrsnc/single/bcopy", "egrsnc/multi/bcopy");

    private ForcedProtocol() {
    }

    /** Whether {@link #settings} knows how to force {@code protocol}. */
    public static boolean canForce(String protocol) {
        return ALONE.contains(protocol) || protocol.equals("egr/single/zcopy") || protocol.equals("egr/multi/zcopy")
                || protocol.equals("rndv/get/zcopy") || protocol.equals("rndv/put/zcopy");
    }

    /**
     * The settings (NUCX_* names without the prefix) forcing {@code protocol}.
     *
     * @throws IllegalArgumentException for a protocol it does not know how to force
     */
    public static Map<String, String> settings(String protocol) {
        Map<String, String> s = new LinkedHashMap<>();
        if (ALONE.contains(protocol)) {
            s.put("PROTOS", protocol);
            if (protocol.equals("tag/rndv")) {
                s.put("RNDV_SCHEME", "am"); // the RTS offers no key, and the receiver asks for fragments
            }
            return s;
        }
        s.put("PROTOS", protocol + "," + FALLBACK);
        switch (protocol) {
            case "egr/single/zcopy", "egr/multi/zcopy" -> s.put("ZCOPY_THRESH", "0");
            case "rndv/get/zcopy" -> s.put("RNDV_THRESH", "0");
            case "rndv/put/zcopy" -> {
                s.put("RNDV_THRESH", "0");
                s.put("RNDV_SCHEME", "put_zcopy");
            }
            default -> throw new IllegalArgumentException("no settings force protocol '" + protocol + "'");
        }
        return s;
    }
}
