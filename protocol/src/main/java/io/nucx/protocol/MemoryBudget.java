package io.nucx.protocol;

/**
 * Bytes that a peer's traffic may make this side hold in one kind of place, per endpoint, inside a budget of the
 * worker's that all its endpoints share: receive memory no posted receive owns (unexpected messages, messages still
 * arriving for the unexpected queue or the pipeline, buffers offered for PUT, whole buffers taken for a rendezvous
 * message before its data come), or writes queued while an endpoint
 * wires up. Each entry is charged its bytes plus {@link #ENTRY_COST} for its bookkeeping, so a flood of empty
 * messages is bounded too. Charging more than either budget allows throws {@link LimitExceededException} naming the
 * bound, and marks the endpoint's budget {@link #exceeded()}: its owner then fails the endpoint and releases what it
 * holds. Loop only (the worker's budget is touched only from its endpoints, on the worker's loop).
 */
public final class MemoryBudget {

    /** What one queued message or message in progress costs beyond its bytes: objects, map and queue entries. */
    public static final int ENTRY_COST = 256;

    private final String setting;
    private final long limit;
    private final MemoryBudget parent;
    private long used;
    private boolean exceeded;

    private MemoryBudget(String setting, long limit, MemoryBudget parent) {
        this.setting = setting;
        this.limit = limit;
        this.parent = parent;
    }

    /** A worker's budget: {@code limit} bytes over all its endpoints, set by {@code setting}. */
    public static MemoryBudget worker(String setting, long limit) {
        return new MemoryBudget(setting, limit, null);
    }

    /** No bound (tools and tests that do not exercise one). */
    public static MemoryBudget unlimited() {
        return new MemoryBudget("unlimited", Long.MAX_VALUE, null);
    }

    /** An endpoint's budget of {@code limit} bytes inside this one. */
    public MemoryBudget endpoint(String setting, long limit) {
        return new MemoryBudget(setting, limit, this);
    }

    /**
     * Charges {@code bytes} for {@code what} here and to the worker.
     *
     * @throws LimitExceededException when either budget would go over; nothing is charged then
     */
    public void charge(long bytes, String what) {
        if (bytes > limit - used) {
            exceeded = true;
            throw new LimitExceededException(setting, limit, what + " would hold " + (used + bytes)
                    + " bytes for one peer");
        }
        if (parent != null) {
            try {
                parent.charge(bytes, what);
            } catch (LimitExceededException e) {
                exceeded = true; // this endpoint pushed the worker over: it is the one that fails
                throw e;
            }
        }
        used += bytes;
    }

    /**
     * Charges {@code bytes} if both budgets allow it; false (nothing charged, nothing marked) otherwise. A hot path
     * asks this first and calls {@link #charge} (which then throws, naming what) only when it is refused, so the text
     * that names what is built only for the error.
     */
    public boolean tryCharge(long bytes) {
        if (bytes > limit - used || (parent != null && !parent.tryCharge(bytes))) {
            return false;
        }
        used += bytes;
        return true;
    }

    /** Gives back {@code bytes} charged earlier, here and to the worker. */
    public void release(long bytes) {
        if (bytes == 0) {
            return;
        }
        assert bytes > 0 && bytes <= used : bytes + " of " + used;
        used -= bytes;
        if (parent != null) {
            parent.release(bytes);
        }
    }

    /** Bytes charged now. */
    public long used() {
        return used;
    }

    public long limit() {
        return limit;
    }

    /** Whether a charge here went over: the endpoint fails, and what it holds is dropped rather than kept. */
    public boolean exceeded() {
        return exceeded;
    }
}
