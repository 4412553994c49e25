package io.nucx.wireup;

/**
 * Whether an endpoint's peer spoke since keepalive's last tick, and for how many ticks it has not. Every frame from the
 * peer sets {@code heard} (a plain field: loop only, no clock read per frame). Silence counts from creation, so a peer
 * that never answers fails too.
 */
final class PeerLiveness {

    private boolean heard = true;
    int silentTicks;

    void heard() {
        heard = true;
    }

    /** Whether the peer was heard since the last {@link #takeHeard}, which clears it. */
    boolean heardSinceTick() {
        return heard;
    }

    /** Whether the peer was heard since the last call; clears it. */
    boolean takeHeard() {
        boolean h = heard;
        heard = false;
        return h;
    }
}
