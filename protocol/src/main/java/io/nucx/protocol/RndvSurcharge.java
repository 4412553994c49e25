package io.nucx.protocol;

/**
 * What a rendezvous over an endpoint's AM lane ({@code tag/rndv}: RTS, RTR, then the data as fragments) costs on the
 * running machine beyond what the lane's figures price, as {@code nucx calibrate} measured it against eager's
 * fragments of the same size: {@code max(0, seconds + perByte * size)}. Its cause is not in the figures: the lane's
 * latency is an 8-byte ping-pong's, while a rendezvous's control messages follow megabytes copied through the ring,
 * which have left the caches cold (BENCHMARKS.md, "The ring's rendezvous against its eager").
 *
 * @param seconds the line's value at size 0, seconds (may be negative: then it is 0 up to where the line crosses 0)
 * @param perByte its growth per byte of the message, seconds (may be negative: then it is 0 from where it crosses)
 */
public record RndvSurcharge(double seconds, double perByte) {

    /** None: a rendezvous costs what the lane's figures say (the static estimates; a profile without it). */
    public static final RndvSurcharge NONE = new RndvSurcharge(0, 0);

    public RndvSurcharge {
        if (!Double.isFinite(seconds) || !Double.isFinite(perByte)) {
            throw new IllegalArgumentException("a rendezvous surcharge needs finite figures, got " + seconds + " s + "
                    + perByte + " s/B");
        }
    }

    /** The surcharge of a {@code size}-byte message, seconds; never below 0. */
    public double at(long size) {
        return Math.max(0, seconds + perByte * size);
    }

    /** Whether it is 0 for every size. */
    public boolean isNone() {
        return seconds <= 0 && perByte <= 0;
    }
}
