package io.nucx.examples.perf;

import java.util.Arrays;

/** The tests, named and described as ucx_perftest names and describes them. */
public enum PerfTestType {
    TAG_LAT("tag_lat", "tag match latency", true),
    TAG_BW("tag_bw", "tag match bandwidth", false);

    private final String name;
    private final String description;
    private final boolean pingPong;

    PerfTestType(String name, String description, boolean pingPong) {
        this.name = name;
        this.description = description;
        this.pingPong = pingPong;
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
