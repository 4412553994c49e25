package io.nucx.protocol;

import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/** How many times each protocol ran, per worker: the observable proof of which protocol carried a message. */
public final class ProtocolCounters {

    private final Map<String, LongAdder> counters = new ConcurrentHashMap<>();

    /** The counter of one protocol (e.g. "egr/multi/bcopy"). Callers keep the returned adder. */
    public LongAdder counter(String protocol) {
        return counters.computeIfAbsent(protocol, p -> new LongAdder());
    }

    /** How many sends the protocol carried. */
    public long count(String protocol) {
        LongAdder a = counters.get(protocol);
        return a == null ? 0 : a.sum();
    }

    /** Every counter, sorted by name. */
    public Map<String, Long> snapshot() {
        Map<String, Long> m = new TreeMap<>();
        counters.forEach((k, v) -> m.put(k, v.sum()));
        return m;
    }
}
