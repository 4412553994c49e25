package io.nucx.wireup;

import io.nucx.ErrorMode;
import io.nucx.transport.NucxConfig;
import io.nucx.transport.shm.ShmIoHandler;
import io.nucx.transport.config.AbstractConfigTable;
import io.nucx.transport.config.ConfigEntry;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/** The worker's settings: progress mode, error handling and keepalive of endpoints, multi-lane limits. */
public final class WireupConfig extends AbstractConfigTable {

    /** Shortest keepalive period: a tick walks every endpoint, so a shorter one costs more than it detects. */
    public static final long MIN_KEEPALIVE_INTERVAL_NANOS = NucxConfig.MIN_KEEPALIVE_INTERVAL_NANOS;
    private static final long MAX_KEEPALIVE_NANOS = 3_600_000_000_000L;

    /** Progress mode of workers created by nucx: spin (busy-poll) or block. */
    public static final ConfigEntry<Boolean> BUSY_POLL = ConfigEntry.bool("BUSY_POLL", "n",
            "Busy-poll the worker's event loop (y) or block until woken (n)");
    /** A worker's own loop is where its app's work runs (perftest, NucxBootstrap's callbacks): it spins long. */
    private static final int WORKER_IDLE_SPINS = 1000;
    /**
     * A NucxEventLoopGroup's loops give their core away sooner ({@link #idleBackoff} says why): after 10 idle passes
     * (a look at each ring and now and then the sockets). Against 100, in turns with plain TCP over shm lanes: gRPC's
     * latency 0.63x TCP's where it was 0.75-0.82x, HTTP with 64 KiB bodies 2.14-2.24x TCP's throughput where
     * 2.29-2.43x (BENCHMARKS.md, "Socket-only group loops yield from their first idle pass").
     */
    private static final int GROUP_IDLE_SPINS = 10;
    /**
     * A NucxEventLoopGroup's loops without rings (tcp lanes, sockets only) give it away from their first idle pass:
     * there a pass is a system call (epoll_wait) anyway, and a pass that only spins keeps the core from the app's
     * thread that has the work (gRPC's executor answering). Against 100 passes, in turns with plain TCP: gRPC's
     * latency over tcp lanes 0.90-0.95x TCP's where it was 1.15-1.27x, HTTP with 64 KiB bodies 0.95x TCP's throughput
     * where 0.73x. Loops with rings spin {@link #GROUP_IDLE_SPINS} first: an idle pass there is a look at memory.
     */
    private static final int GROUP_SOCKET_IDLE_SPINS = 0;
    /** Idle passes in a row a polling loop spins before it may yield its core between passes; -1: auto. */
    public static final ConfigEntry<Integer> IDLE_SPINS = ConfigEntry.integerOrAuto("IDLE_SPINS", "auto",
            "Idle passes in a row a polling loop (busy-poll, or NUCX_SHM_SPIN) only spins before it may yield its "
                    + "core between passes (NUCX_IDLE_BACKOFF); auto: " + WORKER_IDLE_SPINS + " for a worker's own "
                    + "loop, " + GROUP_IDLE_SPINS + " for a NucxEventLoopGroup's (" + GROUP_SOCKET_IDLE_SPINS
                    + " on its loops without shm lanes)", 0, 1_000_000_000);
    /** When a polling loop past its spin passes yields; empty (auto): as the loop's use says ({@link #idleBackoff}). */
    public static final ConfigEntry<Optional<ShmIoHandler.Backoff>> IDLE_BACKOFF = ConfigEntry.choice("IDLE_BACKOFF",
            "auto", "When an idle polling loop past NUCX_IDLE_SPINS yields its core between passes: jit (while the "
                    + "JIT compiler is at work, so it gets the CPU during the warm-up on a 2-core machine), always, "
                    + "never (spin), or auto: jit for a worker's own loop, always for a NucxEventLoopGroup's, whose "
                    + "cores the app's own threads share",
            backoffs());
    /** Error handling of new endpoints, like ucp_ep_params.err_mode. */
    public static final ConfigEntry<ErrorMode> ERR_MODE = ConfigEntry.choice("ERR_MODE", "peer",
            "Error handling of new endpoints: peer (keepalive; a lost peer fails the endpoint's operations), failover "
                    + "(as peer, and a failed lane is replaced by another transport, resending what it had not "
                    + "confirmed) or none",
            List.of(ErrorMode.PEER, ErrorMode.FAILOVER, ErrorMode.NONE));
    /** Lanes rendezvous data may be spread over, the AM lane included, like UCX_MAX_RNDV_LANES. */
    public static final ConfigEntry<Integer> MAX_RNDV_LANES = ConfigEntry.integer("MAX_RNDV_LANES", "2",
            "Lanes (transports) a rendezvous transfer may be spread over, the AM lane included (1..8); also the RMA "
                    + "lanes (RDMA rails) a GET, PUT or RMA operation is split over", 1, 8);
    /** A lane much slower than the fastest holds a split transfer back more than it adds. */
    public static final ConfigEntry<Double> MULTI_LANE_MAX_RATIO = ConfigEntry.decimal("MULTI_LANE_MAX_RATIO", "4",
            "An AM_BW lane is used only if its bandwidth is at least the fastest lane's divided by this; shm (12 GB/s) "
                    + "and tcp on loopback (1.2 GB/s) need 11 or more",
            1, 1000);
    /** How often a worker checks its error-mode-peer endpoints, in nanoseconds; {@code Long.MAX_VALUE}: never. */
    public static final ConfigEntry<Long> KEEPALIVE_INTERVAL = ConfigEntry.durationOrInf("KEEPALIVE_INTERVAL", "1s",
            "Keepalive period: each tick sends EP_CHECK on every peer-mode endpoint (10ms..1h, or inf for none)",
            MIN_KEEPALIVE_INTERVAL_NANOS, MAX_KEEPALIVE_NANOS, "must be at least 10ms (or inf to turn keepalive off)");
    /** Silence after which a peer is declared hung, in nanoseconds; at least two intervals (checked with them). */
    public static final ConfigEntry<Long> KEEPALIVE_TIMEOUT = ConfigEntry.duration("KEEPALIVE_TIMEOUT", "5s",
            "A peer-mode endpoint that hears nothing from its peer this long fails with EndpointTimeoutException (at "
                    + "least 2 x KEEPALIVE_INTERVAL); in failover mode a lane with work that stays silent this long "
                    + "is closed and failed over first; also the most a graceful close waits for the peer",
            MAX_KEEPALIVE_NANOS);

    /** Bytes of writes one endpoint queues while it wires up (its stub). */
    public static final ConfigEntry<Long> STUB_EP_BYTES = ConfigEntry.size("STUB_EP_BYTES", "64m",
            "Bytes of writes one endpoint may queue while it wires up; more fails that endpoint", 64 << 10,
            Long.MAX_VALUE / 2);
    /** The same over all endpoints of a worker. */
    public static final ConfigEntry<Long> STUB_WORKER_BYTES = ConfigEntry.size("STUB_WORKER_BYTES", "512m",
            "Bytes of writes all endpoints of a worker may queue while they wire up; the endpoint that goes over it "
                    + "fails", 64 << 10, Long.MAX_VALUE / 2);
    /** A connection a peer opened must carry its wireup (REQUEST or LANE_ATTACH) within this, in nanoseconds. */
    public static final ConfigEntry<Long> WIREUP_TIMEOUT = ConfigEntry.duration("WIREUP_TIMEOUT", "10s",
            "A connection a peer opened that carried no wireup REQUEST (or LANE_ATTACH) this long is closed "
                    + "(10ms..1h)", MAX_KEEPALIVE_NANOS)
            .require(v -> v >= MIN_KEEPALIVE_INTERVAL_NANOS, "must be at least 10ms");
    /** Endpoints a worker holds at once; a peer's REQUEST beyond is refused. */
    public static final ConfigEntry<Integer> MAX_ENDPOINTS = ConfigEntry.integer("MAX_ENDPOINTS", "65536",
            "Endpoints a worker holds at once; a peer's wireup REQUEST beyond is refused", 1, 1 << 24);
    /** Frames one lane handles per loop turn; the rest of what a read brought waits for the next turn. */
    public static final ConfigEntry<Integer> LANE_BATCH = ConfigEntry.integer("LANE_BATCH", "512",
            "Frames one lane handles per event-loop turn; the rest of a read waits, reading paused, for the next "
                    + "turn, so a flooding peer delays the loop's other lanes and timers by one share", 16, 1 << 20);
    /** A shared secret that authenticates wireup ({@link WireupAuth}); a *_TOKEN value is never printed. */
    public static final ConfigEntry<String> AUTH_TOKEN = ConfigEntry.string("AUTH_TOKEN", "",
            "Shared secret (16 bytes or more) that authenticates wireup: a REQUEST or LANE_ATTACH without an HMAC "
                    + "proof of it (over both worker uuids, a nonce and the time) is refused before any endpoint "
                    + "exists; empty: off");
    /** The same secret read from a file. */
    public static final ConfigEntry<String> AUTH_KEY_FILE = ConfigEntry.string("AUTH_KEY_FILE", "",
            "File holding the wireup secret (16 bytes or more), instead of NUCX_AUTH_TOKEN");

    /** Most a worker's start may spend warming up the hot path; longer would be a start that looks hung. */
    private static final long MAX_WARMUP_NANOS = 60_000_000_000L;
    /** How long a worker started by {@code NucxBootstrap} warms the JIT compiler up before it is handed over. */
    public static final ConfigEntry<Long> WARMUP = ConfigEntry.duration("WARMUP", "0",
            "Before NucxBootstrap.start() returns a worker, it exchanges small and medium tagged messages this long "
                    + "with a private worker of its settings (over the configured transports, endpoints wired up "
                    + "again every 100 ms), so the JIT compiler has the send and receive paths compiled before the "
                    + "first real message; start-up takes that much longer; 0: off",
            MAX_WARMUP_NANOS);

    /** NUCX_IDLE_SPINS for a loop of a NucxEventLoopGroup ({@code groupLoop}) or a worker's own loop. */
    public static int idleSpins(NucxConfig config, boolean groupLoop) {
        return idleSpinsOr(config, groupLoop ? GROUP_IDLE_SPINS : WORKER_IDLE_SPINS);
    }

    /** As {@link #idleSpins}, for a loop without rings (sockets only: tcp lanes), whose idle pass is a system call. */
    public static int socketIdleSpins(NucxConfig config, boolean groupLoop) {
        return idleSpinsOr(config, groupLoop ? GROUP_SOCKET_IDLE_SPINS : WORKER_IDLE_SPINS);
    }

    /** NUCX_IDLE_SPINS where set, else {@code auto}. */
    private static int idleSpinsOr(NucxConfig config, int auto) {
        int spins = config.get(IDLE_SPINS);
        return spins >= 0 ? spins : auto;
    }

    /**
     * NUCX_IDLE_BACKOFF for a loop of a NucxEventLoopGroup ({@code groupLoop}) or a worker's own loop. A group's
     * loops share the cores with an app's own threads (gRPC's executor, a caller waiting for its answer): on two
     * cores two loops that spin leave those threads a core only when the scheduler takes one, so by default they
     * yield, and always (BENCHMARKS.md, "A NucxEventLoopGroup's idle loops yield").
     */
    public static ShmIoHandler.Backoff idleBackoff(NucxConfig config, boolean groupLoop) {
        return config.get(IDLE_BACKOFF).orElse(groupLoop ? ShmIoHandler.Backoff.ALWAYS : ShmIoHandler.Backoff.JIT);
    }

    private static Map<String, Optional<ShmIoHandler.Backoff>> backoffs() {
        Map<String, Optional<ShmIoHandler.Backoff>> m = new LinkedHashMap<>();
        m.put("auto", Optional.empty());
        for (ShmIoHandler.Backoff b : List.of(ShmIoHandler.Backoff.JIT, ShmIoHandler.Backoff.ALWAYS,
                ShmIoHandler.Backoff.NEVER)) {
            m.put(b.name().toLowerCase(Locale.ROOT), Optional.of(b));
        }
        return m;
    }

    public WireupConfig() {
        super("Worker, endpoints and wireup", RANK_WORKER, BUSY_POLL, IDLE_SPINS, IDLE_BACKOFF, ERR_MODE, MAX_RNDV_LANES,
                MULTI_LANE_MAX_RATIO, KEEPALIVE_INTERVAL, KEEPALIVE_TIMEOUT, STUB_EP_BYTES, STUB_WORKER_BYTES,
                WIREUP_TIMEOUT, MAX_ENDPOINTS, LANE_BATCH, AUTH_TOKEN, AUTH_KEY_FILE, WARMUP);
    }

    /** The keepalive timeout must be at least twice the interval, so that one late tick does not fail a live peer. */
    @Override
    public void conclude(NucxConfig config) {
        long interval = config.get(KEEPALIVE_INTERVAL);
        long timeout = config.get(KEEPALIVE_TIMEOUT);
        if (interval != Long.MAX_VALUE && timeout < 2 * interval) {
            throw config.invalid(KEEPALIVE_TIMEOUT, "must be at least twice NUCX_KEEPALIVE_INTERVAL="
                    + config.raw(KEEPALIVE_INTERVAL) + ", so that one late tick does not fail a live peer");
        }
        WireupAuth.from(config); // a short key, an unreadable file, or both given, stop start-up
    }
}
