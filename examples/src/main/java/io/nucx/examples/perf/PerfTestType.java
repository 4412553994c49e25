package io.nucx.examples.perf;

import java.util.Arrays;

/** The tests, named and described as ucx_perftest names and describes them. */
public enum PerfTestType {
    TAG_LAT("tag_lat", "tag match latency", true, false),
    TAG_BW("tag_bw", "tag match bandwidth", false, false),
    TAG_SYNC_LAT("tag_sync_lat", "tag sync match latency", true, true),
    TAG_SYNC_BW("tag_sync_bw", "tag sync match bandwidth", false, true),
    /** The RMA API: puts into the server's registered memory, {@code window} outstanding. */
    UCP_PUT_BW("ucp_put_bw", "put bandwidth", false, false, true),
    /** The RMA API: gets from the server's registered memory, {@code window} outstanding. */
    UCP_GET("ucp_get", "get bandwidth", false, false, true),
    /** Active messages ({@code ucp_am_send_nbx}) to a handler; rendezvous ones received into a buffer. */
    AM_LAT("am_lat", "active message latency", true, false),
    AM_BW("am_bw", "active message bandwidth", false, false),
    /** The endpoint's byte stream ({@code ucp_stream_send_nbx}), as a Netty app's writes over nucx go: ping-pong. */
    STREAM_LAT("stream_lat", "stream latency", true, false),
    /** The endpoint's byte stream, {@code window} writes outstanding; the server counts what comes up its pipeline. */
    STREAM_BW("stream_bw", "stream bandwidth", false, false);

    private final String name;
    private final String description;
    private final boolean pingPong;
    private final boolean sync;
    private final boolean rma;

    PerfTestType(String name, String description, boolean pingPong, boolean sync) {
        this(name, description, pingPong, sync, false);
    }

    PerfTestType(String name, String description, boolean pingPong, boolean sync, boolean rma) {
        this.name = name;
        this.description = description;
        this.pingPong = pingPong;
        this.sync = sync;
        this.rma = rma;
    }

    /** An RMA test: the server registers memory and sends its key; the client puts or gets. */
    public boolean rma() {
        return rma;
    }

    /** The measured messages are active messages to a handler rather than tagged ones. */
    public boolean am() {
        return this == AM_LAT || this == AM_BW;
    }

    /** The measured messages are writes to the endpoint's byte stream, read from its pipeline. */
    public boolean stream() {
        return this == STREAM_LAT || this == STREAM_BW;
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
