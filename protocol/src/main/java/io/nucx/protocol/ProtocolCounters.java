package io.nucx.protocol;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;

/**
 * A worker's counts: how many messages and bytes each protocol sent over each transport (the observable proof of
 * which protocol carried a message), and events by name (fallbacks, failovers, wireup outcomes). Traffic is counted by
 * the worker's loop alone ({@link Traffic}), events by a {@link LongAdder} on any thread; readers (tests, metrics) may
 * be any thread.
 */
public final class ProtocolCounters {

    /**
     * Messages and bytes one protocol sent over one transport. Callers keep it and count with {@link #sent}, from the
     * worker's loop only: one writer, as Agrona's counters have, so a count is a plain add and an ordered store rather
     * than an atomic instruction per message (which on the send path also waited for the message's stores to the
     * ring to drain). Other threads read a recent value.
     */
    public static final class Traffic {
        private static final VarHandle MESSAGES;
        private static final VarHandle BYTES;

        static {
            try {
                MethodHandles.Lookup l = MethodHandles.lookup();
                MESSAGES = l.findVarHandle(Traffic.class, "messages", long.class);
                BYTES = l.findVarHandle(Traffic.class, "bytes", long.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        private final String protocol;
        private final String transport;
        private long messages;
        private long bytes;

        private Traffic(String protocol, String transport) {
            this.protocol = protocol;
            this.transport = transport;
        }

        /** One message of {@code length} bytes went out by this protocol. The worker's loop only. */
        public void sent(long length) {
            MESSAGES.setOpaque(this, messages + 1);
            BYTES.setOpaque(this, bytes + length);
        }

        public String protocol() {
            return protocol;
        }

        public String transport() {
            return transport;
        }

        public long messages() {
            return (long) MESSAGES.getOpaque(this);
        }

        public long bytes() {
            return (long) BYTES.getOpaque(this);
        }
    }

    private record Key(String protocol, String transport) {
    }

    private final Map<String, LongAdder> counters = new ConcurrentHashMap<>();
    /** {@link RmaTransfer#RAIL_BYTES_COUNTER} counters by rail name: no name is built per transfer. */
    private final Map<String, LongAdder> railBytes = new ConcurrentHashMap<>();
    private final Map<Key, Traffic> traffic = new ConcurrentHashMap<>();
    private final List<Consumer<Traffic>> listeners = new CopyOnWriteArrayList<>();

    /** The bytes moved over the RMA rail {@code railName} ({@link RmaTransfer#RAIL_BYTES_COUNTER} + the name). */
    public LongAdder railBytes(String railName) {
        LongAdder a = railBytes.get(railName);
        return a != null ? a : railBytes.computeIfAbsent(railName,
                n -> counter(RmaTransfer.RAIL_BYTES_COUNTER + n));
    }

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
    public void onTraffic(Consumer<Traffic> listener) {
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
