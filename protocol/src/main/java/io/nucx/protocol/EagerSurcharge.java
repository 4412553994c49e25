package io.nucx.protocol;

/**
 * What a copy send over an endpoint's AM lane costs beyond what the lane's figures price, from a size on, as
 * {@code nucx calibrate} measured it. The figures are fitted at an 8-byte message (latency, overhead) and from the
 * slope between two one-fragment sends (bandwidth), not at those sends themselves: over shm's ring, a line through an
 * 8-byte message with that slope priced 4-64 KiB sends about 1 us under their time, and the tables kept eager up to
 * 44-54 KB against cma's read, which took 0.70 of eager's time at 53,831 B (BENCHMARKS.md). The tables charge it to
 * every eager protocol from {@code from} bytes on (the smaller of the two sends), on the latency factor: what one
 * message pays, and a stream of them overlaps.
 *
 * @param from    bytes: the size from which it is charged
 * @param seconds what each message is charged from there, seconds (0: nothing)
 */
public record EagerSurcharge(long from, double seconds) {

    /** None: eager costs what the lane's figures say (the static estimates; a profile without it). */
    public static final EagerSurcharge NONE = new EagerSurcharge(0, 0);

    public EagerSurcharge {
        if (from < 0 || !(seconds >= 0) || !Double.isFinite(seconds)) {
            throw new IllegalArgumentException("an eager surcharge needs a size >= 0 and a finite figure >= 0, got "
                    + seconds + " s from " + from + " B");
        }
    }
}
