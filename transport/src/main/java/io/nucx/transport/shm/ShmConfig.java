package io.nucx.transport.shm;

import io.nucx.transport.HandOffRate;
import io.nucx.transport.NucxConfig;
import io.nucx.transport.config.AbstractConfigTable;
import io.nucx.transport.config.ConfigEntry;

/** The shm transport's settings ({@code NUCX_SHM_*}). */
public final class ShmConfig extends AbstractConfigTable {

    /** A worker's own loop, whose thread is its app's (perftest, NucxBootstrap): a reply within this is common. */
    private static final long WORKER_SPIN_NANOS = 100_000L;
    /**
     * A NucxEventLoopGroup's loops, which yield their core between idle passes (NUCX_IDLE_BACKOFF): parking costs a
     * wake-up per message once an app's answer takes longer than the spin (gRPC's, handed through its executor
     * threads: 1.02-1.14x plain TCP's median at 100 us, 0.81-0.85x at 300 us; BENCHMARKS.md, "Netty apps against
     * plain TCP in turns").
     */
    private static final long GROUP_SPIN_NANOS = 300_000L;
    /**
     * How long an idle loop keeps polling before it parks, in nanoseconds: its shm rings and sockets, and a loop
     * without shm channels its sockets (a reply within the spin is read without a wake-up); -1: auto.
     */
    public static final ConfigEntry<Long> SPIN = ConfigEntry.durationOrAuto("SHM_SPIN", "auto",
            "Time an idle event loop polls before parking: its shm rings and sockets, or its sockets alone in a loop "
                    + "without shm channels (a reply within it is read without a wake-up; e.g. 0, 50us, 1ms); auto: "
                    + WORKER_SPIN_NANOS / 1000 + "us for a worker's own loop, " + GROUP_SPIN_NANOS / 1000
                    + "us for a NucxEventLoopGroup's", 10_000_000_000L);
    /**
     * How long an idle loop polls before it parks: for ever when it busy-polls, else {@link #SPIN}, whose auto
     * depends on whether the loop is a NucxEventLoopGroup's ({@code groupLoop}) or a worker's own. Above 0 the loop
     * polls, and {@code IoEngine.configured} gives it epoll.
     */
    public static long loopSpinNanos(NucxConfig config, boolean busyPoll, boolean groupLoop) {
        if (busyPoll) {
            return Long.MAX_VALUE;
        }
        long spin = config.get(SPIN);
        return spin >= 0 ? spin : groupLoop ? GROUP_SPIN_NANOS : WORKER_SPIN_NANOS;
    }

    /** Bytes of each shm ring (one per direction per connection), a power of two. */
    public static final ConfigEntry<Long> RING_SIZE = ConfigEntry.size("SHM_RING_SIZE", "4m",
            "Bytes of each shm ring, a power of two (one ring per direction per connection)", 64 << 10, 1 << 30)
            .require(v -> Long.bitCount(v) == 1, "must be a power of two");
    /** Largest active-message frame one shm record carries; at most an eighth of the ring (checked with it). */
    public static final ConfigEntry<Long> SEG_SIZE = ConfigEntry.size("SHM_SEG_SIZE", "64k",
            "Largest payload of one shm active-message record (eager short and bcopy limit, fragment size); "
                    + "at most ring size / 8 - 64 (a record with its header takes at most an eighth of the ring)",
            4096, 128L << 20);

    /**
     * Bytes/second at which payloads are copied into a ring and out of it, for the cost model; -1 (auto): measured
     * when the first shm iface of the host opens ({@link HandOffRate}: a copy handed between two cores).
     */
    public static final ConfigEntry<Long> COPY_BW = ConfigEntry.sizeOrAuto("SHM_COPY_BW", "auto",
            "Bytes per second the cost model charges shm's copies into and out of a ring at: auto (measured when "
                    + "the first shm iface opens, about 20 ms: records handed between two threads through a ring-sized "
                    + "region; one core's copy in its cache in a process given one processor) or a size per second "
                    + "(e.g. 20g); over shm+cma it decides "
                    + "where cma's rendezvous starts. A NUCX_PERF_PROFILE with shm's bandwidth prices shm by its "
                    + "figures instead", 100L << 20, 1L << 40);

    /** A shm handshake (HELLO, REPLY) that has not finished this long is closed and its rings released. */
    public static final ConfigEntry<Long> HANDSHAKE_TIMEOUT = ConfigEntry.duration("SHM_HANDSHAKE_TIMEOUT", "10s",
            "A shm handshake not finished this long is closed and its rings released (10ms..1h)", 3_600_000_000_000L)
            .require(v -> v >= 10_000_000L, "must be at least 10ms");
    /** Handshakes an iface serves at once; connections beyond wait in the socket's backlog, unaccepted. */
    public static final ConfigEntry<Integer> HANDSHAKES = ConfigEntry.integer("SHM_HANDSHAKES", "64",
            "Shm handshakes a worker serves at once; further connections wait, not accepted, in the listening "
                    + "socket's backlog until one finishes or times out", 1, 1 << 16);

    static final ShmConfig TABLE = new ShmConfig();

    public ShmConfig() {
        super("shm transport", RANK_TRANSPORT, SPIN, RING_SIZE, SEG_SIZE, COPY_BW, HANDSHAKE_TIMEOUT, HANDSHAKES);
    }

    /** The ring size of {@code config}. */
    static int ringSize(NucxConfig config) {
        return (int) (long) config.get(RING_SIZE);
    }

    /** The segment size of {@code config}, checked against its ring: one record takes at most an eighth of it. */
    static int segSize(NucxConfig config) {
        long seg = config.get(SEG_SIZE);
        long max = ringSize(config) / 8 - 64;
        if (seg > max) {
            throw config.invalid(SEG_SIZE, "at most " + max + " bytes with NUCX_SHM_RING_SIZE="
                    + config.raw(RING_SIZE) + " (one record takes at most an eighth of the ring)");
        }
        return (int) seg;
    }

    /** The copy rate of {@code config}, bytes/s: set, or measured. */
    static double copyBandwidth(NucxConfig config) {
        long set = config.get(COPY_BW);
        return set > 0 ? set : HandOffRate.measured(config);
    }

    @Override
    public void conclude(NucxConfig config) {
        segSize(config);
    }
}
