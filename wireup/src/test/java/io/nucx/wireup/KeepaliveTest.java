package io.nucx.wireup;

import org.junit.jupiter.api.Test;

import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Keepalive on virtual time: each {@link Keepalive#tick} stands for one NUCX_KEEPALIVE_INTERVAL, so the bounds are
 * checked exactly, without waiting.
 */
class KeepaliveTest {

    private static final long SECOND = TimeUnit.SECONDS.toNanos(1);

    @Test
    void aSilentPeerExpiresAfterTheTimeoutRoundedUpToWholeIntervals() {
        Keepalive k = new Keepalive(SECOND, 5 * SECOND);
        PeerLiveness peer = new PeerLiveness();
        assertEquals(Keepalive.Verdict.PROBE, k.tick(peer), "heard at creation: the first tick only clears it");
        for (int i = 1; i < 5; i++) {
            assertEquals(Keepalive.Verdict.PROBE, k.tick(peer), "silent tick " + i + " of 5");
        }
        assertEquals(Keepalive.Verdict.EXPIRED, k.tick(peer), "the fifth silent tick");
        assertEquals(5, new Keepalive(SECOND, (long) (4.5 * SECOND)).ticksToExpire(), "4.5 s rounds up to 5 ticks");
        assertEquals(1, new Keepalive(SECOND, 1).ticksToExpire(), "at least one tick");
    }

    @Test
    void anyFrameResetsTheSilence() {
        Keepalive k = new Keepalive(SECOND, 3 * SECOND);
        PeerLiveness peer = new PeerLiveness();
        for (int round = 0; round < 100; round++) {
            assertEquals(Keepalive.Verdict.PROBE, k.tick(peer));
            assertEquals(Keepalive.Verdict.PROBE, k.tick(peer));
            peer.heard(); // a frame before the third silent tick
        }
        assertEquals(Keepalive.Verdict.PROBE, k.tick(peer));
        assertEquals(Keepalive.Verdict.PROBE, k.tick(peer));
        assertEquals(Keepalive.Verdict.PROBE, k.tick(peer));
        assertEquals(Keepalive.Verdict.EXPIRED, k.tick(peer));
    }

    /**
     * On a clock where ticks come every interval, a peer whose last frame arrived at any moment expires between the
     * timeout and the timeout plus one interval after that frame: never earlier, never later.
     */
    @Test
    void detectionLandsBetweenTheTimeoutAndOneIntervalMore() {
        long interval = 200_000_000L;
        long timeout = 1_000_000_000L;
        for (long lastFrame = 0; lastFrame < 3 * interval; lastFrame += interval / 7) {
            Keepalive k = new Keepalive(interval, timeout);
            PeerLiveness peer = new PeerLiveness();
            long expiredAt = -1;
            for (long now = interval; now < 100 * interval; now += interval) {
                if (now - interval < lastFrame && lastFrame <= now) {
                    peer.heard(); // the frame arrived during the interval ending now
                }
                if (k.tick(peer) == Keepalive.Verdict.EXPIRED) {
                    expiredAt = now;
                    break;
                }
            }
            long silence = expiredAt - lastFrame;
            long frame = lastFrame;
            assertTrue(silence >= timeout && silence <= timeout + interval,
                    () -> "last frame at " + frame + " ns, expired " + silence + " ns later");
        }
    }

    @Test
    void anInfiniteIntervalRunsNoTimer() {
        assertFalse(new Keepalive(Long.MAX_VALUE, 5 * SECOND).enabled());
        assertTrue(new Keepalive(SECOND, 5 * SECOND).enabled());
    }
}
