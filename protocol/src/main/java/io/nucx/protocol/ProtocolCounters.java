package io.nucx.protocol;

import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * A worker's counts: how many messages and bytes each protocol sent over each transport (the observable proof of
 * which protocol carried a message), and events by name (fallbacks, failovers, wireup outcomes). Counting is a
 * {@link LongAdder} add on the sending thread; readers (tests, metrics) may be any thread.
 */
public final class ProtocolCounters {

    /** Messages and bytes one protocol sent over one transport. Callers keep it and count with {@link #sent}. */
    public static final class Traffic {
        private final String protocol;
        private final String transport;
        private final LongAdder messages = new LongAdder();
        private final LongAdder bytes = new LongAdder();

        private Traffic(String protocol, String transport) {
            this.protocol = protocol;
            this.transport = transport;
        }

        /** One message of {@code length} bytes went out by this protocol. */
        public void sent(long length) {
            messages.increment();
            bytes.add(length);
        }

        public String protocol() {
            return protocol;
        }

        public String transport() {
            return transport;
        }

        public long messages() {
            return messages.sum();
        }

        public long bytes() {
            return bytes.sum();
        }
    }

    private record Key(String protocol, String transport) {
    }

    private final Map<String, LongAdder> counters = new ConcurrentHashMap<>();
    private final Map<Key, Traffic> traffic = new ConcurrentHashMap<>();
    private final java.util.List<java.util.function.Consumer<Traffic>> listeners =
            new java.util.concurrent.CopyOnWriteArrayList<>();

    /** The counter of one event or protocol by name (e.g. "rndv/put/zcopy(fallback)"). Callers keep the adder. */
    public LongAdder counter(String name) {
        return counters.computeIfAbsent(name, p -> new LongAdder());
    }

    /** The traffic of {@code protocol} over {@code transport} ("tcp", "shm"...). Callers keep it. */
    public Traffic traffic(String protocol, String transport) {
        Key key = new Key(protocol, transport);
        Traffic t = traffic.get(key);
        if (t == null) {
            Traffic fresh = new Traffic(protocol, transport);
            t = traffic.putIfAbsent(key, fresh);
            if (t == null) {
                t = fresh;
                listeners.forEach(l -> l.accept(fresh));
            }
        }
        return t;
    }

    /**
     * Calls {@code listener} with every traffic counted so far and with each one added later (when an endpoint first
     * uses a protocol over a transport), so metrics can publish them as they appear.
     */
    public void onTraffic(java.util.function.Consumer<Traffic> listener) {
        listeners.add(listener);
        traffic.values().forEach(listener);
    }

    /** Every protocol and transport that carried traffic, for metrics. */
    public Iterable<Traffic> traffic() {
        return traffic.values();
    }

    /** How many times the event happened, or how many messages the protocol sent over every transport. */
    public long count(String name) {
        LongAdder a = counters.get(name);
        long n = a == null ? 0 : a.sum();
        for (Traffic t : traffic.values()) {
            if (t.protocol.equals(name)) {
                n += t.messages();
            }
        }
        return n;
    }

    /** Every counter and every protocol's messages, sorted by name. */
    public Map<String, Long> snapshot() {
        Map<String, Long> m = new TreeMap<>();
        counters.forEach((k, v) -> m.put(k, v.sum()));
        traffic.values().forEach(t -> m.merge(t.protocol, t.messages(), Long::sum));
        return m;
    }
}
