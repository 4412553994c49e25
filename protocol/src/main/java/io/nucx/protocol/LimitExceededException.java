package io.nucx.protocol;

/**
 * A peer made this side exceed one of its bounds (a {@link MemoryBudget}, a backlog of answers it does not read): its
 * endpoint fails with this as the cause, naming the setting and its value, and what it held is released. Other
 * endpoints are not affected.
 */
public final class LimitExceededException extends RuntimeException {

    private final String setting;
    private final long limit;

    /**
     * @param setting the bound's setting, e.g. {@code NUCX_RX_EP_BYTES}
     * @param limit   its value
     * @param what    what the peer did that went over it
     */
    public LimitExceededException(String setting, long limit, String what) {
        super(what + ": over " + setting + "=" + limit);
        this.setting = setting;
        this.limit = limit;
    }

    /** The setting whose bound was exceeded, e.g. {@code NUCX_RX_EP_BYTES}. */
    public String setting() {
        return setting;
    }

    public long limit() {
        return limit;
    }
}
