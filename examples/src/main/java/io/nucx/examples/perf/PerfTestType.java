package io.nucx.examples.perf;

import java.util.Arrays;

/** The tests, named and described as ucx_perftest names and describes them. */
public enum PerfTestType {
    TAG_LAT("tag_lat", "tag match latency", true, false),
    TAG_BW("tag_bw", "tag match bandwidth", false, false),
    TAG_SYNC_LAT("tag_sync_lat", "tag sync match latency", true, true),
    TAG_SYNC_BW("tag_sync_bw", "tag sync match bandwidth", false, true),
    /** Active messages ({@code ucp_am_send_nbx}) to a handler; rendezvous ones received into a buffer. */
    AM_LAT("am_lat", "active message latency", true, false),
    AM_BW("am_bw", "active message bandwidth", false, false);

    private final String name;
    private final String description;
    private final boolean pingPong;
    private final boolean sync;

    PerfTestType(String name, String description, boolean pingPong, boolean sync) {
        this.name = name;
        this.description = description;
        this.pingPong = pingPong;
        this.sync = sync;
    }

    /** The measured messages are active messages to a handler rather than tagged ones. */
    public boolean am() {
        return this == AM_LAT || this == AM_BW;
    }

    /** Sends are synchronous (complete when the receiver matched). */
    public boolean sync() {
        return sync;
    }

    public String testName() {
        return name;
    }

    public String description() {
        return description;
    }

    /** Ping-pong tests report one-way latency (round trip / 2); the others report send overhead. */
    public boolean pingPong() {
        return pingPong;
    }

    public static PerfTestType of(String name) {
        return Arrays.stream(values()).filter(t -> t.name.equals(name)).findFirst().orElseThrow(() ->
                new IllegalArgumentException("unknown test '" + name + "'; known: "
                        + Arrays.stream(values()).map(PerfTestType::testName).toList()));
    }
}
