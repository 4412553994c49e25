package io.nucx.wireup;

/**
 * Keepalive's clock (UCX's keepalive progress): one task per worker ticks every NUCX_KEEPALIVE_INTERVAL and asks each
 * endpoint's {@link PeerLiveness} whether its peer was heard since the last tick. Counting ticks instead of reading
 * a clock per frame keeps the receive path free of time calls; it makes detection land between the timeout and the
 * timeout plus one interval after the last frame. Loop only.
 */
final class Keepalive {

    /** What a tick found: the peer spoke or may still (probe it), or stayed silent too long. */
    enum Verdict { PROBE, EXPIRED }

    private final long intervalNanos;
    private final long timeoutNanos;
    /** Ticks of silence that fail an endpoint: the timeout rounded up to whole intervals. */
    private final int silentLimit;

    /** @param intervalNanos Long.MAX_VALUE: no keepalive ({@code inf}) */
    Keepalive(long intervalNanos, long timeoutNanos) {
        this.intervalNanos = intervalNanos;
        this.timeoutNanos = timeoutNanos;
        this.silentLimit = intervalNanos == Long.MAX_VALUE ? Integer.MAX_VALUE
                : (int) Math.min(Integer.MAX_VALUE, (timeoutNanos + intervalNanos - 1) / intervalNanos);
    }

    /** Whether a timer should tick at all (an interval of {@code inf} disables keepalive). */
    boolean enabled() {
        return intervalNanos != Long.MAX_VALUE;
    }

    long intervalNanos() {
        return intervalNanos;
    }

    long timeoutNanos() {
        return timeoutNanos;
    }

    /** One tick for one peer. */
    Verdict tick(PeerLiveness peer) {
        if (peer.takeHeard()) {
            peer.silentTicks = 0;
            return Verdict.PROBE;
        }
        return ++peer.silentTicks >= silentLimit ? Verdict.EXPIRED : Verdict.PROBE;
    }

    /** Silent ticks after which a peer expires. */
    int ticksToExpire() {
        return silentLimit;
    }
}
