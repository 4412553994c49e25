package io.nucx.protocol;

import io.nucx.protocol.tag.RndvScheme;
import io.nucx.transport.config.AbstractConfigTable;
import io.nucx.transport.config.ConfigEntry;

import java.util.List;

/**
 * The protocol layer's settings (UCX's {@code ucp_context} protocol entries): message limits, the thresholds that
 * force or forbid protocols, the rendezvous scheme, which protocols may be selected, and the selection printout.
 */
public final class ProtocolConfig extends AbstractConfigTable {

    /** Largest tagged message a receiver accepts; checked before any allocation. */
    public static final ConfigEntry<Long> MAX_MSG_SIZE = ConfigEntry.size("MAX_MSG_SIZE", "1g",
            "Largest tagged message a receiver accepts (checked before allocating)", 1, Integer.MAX_VALUE - 64);
    /** Size from which rendezvous is forced (and below which it is not used), like UCX_RNDV_THRESH; -1 for auto. */
    public static final ConfigEntry<Long> RNDV_THRESH = ConfigEntry.sizeOrAuto("RNDV_THRESH", "auto",
            "Force rendezvous from this message size on: auto (the cost model's crossover) or a size", 0,
            Long.MAX_VALUE - 1);
    /**
     * With NUCX_RNDV_THRESH=auto, the largest message an eager protocol carries where a rendezvous can, whatever the
     * cost model prices: an eager send completes once its bytes are out, so a sender ahead of its receiver piles large
     * messages up in the receiver's memory (to NUCX_RX_EP_BYTES, which fails the endpoint), where a rendezvous's send
     * waits for its receive. A ping-pong cannot see that cost, and a calibrated profile may price eager cheaper at any
     * size (over shm it did: BENCHMARKS.md). UCX keeps a fixed threshold for sends that complete without a request
     * for the same reason (UCX_RNDV_SEND_NBR_THRESH).
     */
    public static final ConfigEntry<Long> EAGER_MAX = ConfigEntry.size("EAGER_MAX", "1m",
            "With RNDV_THRESH=auto, the largest message sent eagerly where a rendezvous can carry it, whatever the "
                    + "cost model says (larger ones wait for their receive instead of piling up at a receiver that "
                    + "is behind)", 0, Long.MAX_VALUE - 2);
    /** Which data protocol a rendezvous receiver asks for, like UCX_RNDV_SCHEME. */
    public static final ConfigEntry<RndvScheme> RNDV_SCHEME = ConfigEntry.choice("RNDV_SCHEME", "auto",
            "Rendezvous data protocol the receiver asks for: auto/get_zcopy (read the sender's buffer through the RMA "
                    + "lane when it offers its key and we may), put_zcopy (offer the receive buffer's key in the RTR: "
                    + "the sender writes it, then ATP), am (always fragments); otherwise fragments",
            List.of(RndvScheme.AUTO, RndvScheme.GET_ZCOPY, RndvScheme.PUT_ZCOPY, RndvScheme.AM));
    /** Size from which bcopy protocols are forced (and below which they are not used), like UCX_BCOPY_THRESH. */
    public static final ConfigEntry<Long> BCOPY_THRESH = ConfigEntry.sizeOrAuto("BCOPY_THRESH", "auto",
            "Force copy-in/copy-out protocols from this message size on: auto or a size", 0, Long.MAX_VALUE - 1);
    /**
     * Size from which the eager zero-copy protocols are forced (and below which they are not used), like
     * UCX_ZCOPY_THRESH: -1 auto, {@link Long#MAX_VALUE} inf (never). Its priority (30) lies between the copy
     * protocols' (20) and rendezvous' (60).
     */
    public static final ConfigEntry<Long> ZCOPY_THRESH = ConfigEntry.threshold("ZCOPY_THRESH", "auto",
            "Force eager zero-copy protocols (tcp, native memory) from this message size on: auto (the cost model's "
                    + "choice: on tcp never, whose copy protocols also send native memory from the caller's buffer), "
                    + "a size, or inf (never)");
    /** Print each protocol table when it is built, like UCX_PROTO_INFO. */
    public static final ConfigEntry<Boolean> PROTO_INFO = ConfigEntry.bool("PROTO_INFO", "n",
            "Print each protocol selection table when it is first built (y/n)");
    /** Which protocols may be selected, like UCX_PROTOS: names or globs, comma-separated; '^' excludes them. */
    public static final ConfigEntry<String> PROTOS = ConfigEntry.string("PROTOS", "all",
            "Protocols that may be selected: all, a comma list of names/globs (egr/*,tag/rndv), or ^list to exclude");

    /**
     * Receive memory one endpoint's peer may make this worker hold that no posted receive owns: unexpected messages,
     * messages still arriving for the unexpected queue or the pipeline, buffers offered for PUT; and whole buffers
     * taken for a rendezvous message before its data come, a posted receive's too, until it completes (a peer's
     * announcement would commit them; with no room the data are committed as they arrive instead). Each is counted with
     * {@link MemoryBudget#ENTRY_COST} bytes of bookkeeping. Going over it fails that endpoint and releases it. The
     * default leaves room for a sender well ahead of a slow receiver (10,000 mixed messages of up to 4 MiB sent ahead
     * of their receives queue about 150 MiB), yet one peer cannot take the process's memory.
     */
    public static final ConfigEntry<Long> RX_EP_BYTES = ConfigEntry.size("RX_EP_BYTES", "512m",
            "Receive memory (unexpected messages, partial messages for the unexpected queue or the pipeline, PUT "
                    + "offers, whole buffers taken for a rendezvous message before its data come; 256 bytes of "
                    + "bookkeeping each) one peer's endpoint may hold; more fails that endpoint and releases what it "
                    + "held", 64 << 10, Long.MAX_VALUE / 2);
    /** The same bound over all of a worker's endpoints. */
    public static final ConfigEntry<Long> RX_WORKER_BYTES = ConfigEntry.size("RX_WORKER_BYTES", "1g",
            "Receive memory all peers together may hold on one worker (as NUCX_RX_EP_BYTES); the endpoint that goes "
                    + "over it fails", 64 << 10, Long.MAX_VALUE / 2);
    /** Requests whose answers wait for a lane that takes no more, per endpoint; also a sender's atomics window. */
    public static final ConfigEntry<Integer> REPLY_BACKLOG = ConfigEntry.integer("REPLY_BACKLOG", "16384",
            "Atomics of a peer whose answers wait for it to read; more fails its endpoint. Also the most atomics a "
                    + "sender keeps unanswered per endpoint", 1, 1 << 20);

    /**
     * A performance profile written by {@code nucx calibrate}: the cost model takes the figures it has (latency,
     * overhead, bandwidth, registration cost per lane; memcpy bandwidth) instead of the transports' static estimates.
     */
    public static final ConfigEntry<String> PERF_PROFILE = ConfigEntry.string("PERF_PROFILE", "",
            "Performance profile measured by 'nucx calibrate' (a file); protocol selection uses its figures instead of "
                    + "the transports' static estimates where it has them. Empty: static estimates only");

    public ProtocolConfig() {
        super("Protocols", RANK_PROTOCOL, MAX_MSG_SIZE, RNDV_THRESH, EAGER_MAX, RNDV_SCHEME, BCOPY_THRESH,
                ZCOPY_THRESH, PROTO_INFO, PROTOS, PERF_PROFILE, RX_EP_BYTES, RX_WORKER_BYTES, REPLY_BACKLOG);
    }
}
