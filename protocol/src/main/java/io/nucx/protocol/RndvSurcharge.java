package io.nucx.protocol;

/**
 * What a rendezvous over an endpoint's AM lane ({@code tag/rndv}: RTS, RTR, then the data as fragments) costs beyond
 * eager's fragments of the same size on the running machine, beyond what the lane's figures price that difference at,
 * as {@code nucx calibrate} measured it: the line {@code seconds + perByte * size}. The model only ever adds what it
 * missed, to the protocol it underpriced:
 * <ul>
 *   <li>where the line is above 0, the rendezvous took that much more than priced, and {@link #at} charges it to the
 *       rendezvous. Over shm's ring: the lane's latency is an 8-byte message's, while a rendezvous's control messages
 *       follow megabytes copied through the ring, which have left the caches cold (BENCHMARKS.md, "The ring's
 *       rendezvous against its eager");</li>
 *   <li>where it is below 0, eager took that much more than priced against the rendezvous, and {@link #eagerAt}
 *       charges it to eager's fragments. Over tcp: eager's receiver reads each fragment's header and payload apart,
 *       which the model's per-fragment overhead, fitted from a stream of 8-byte messages, does not price (a 1 MiB
 *       message took 39 reads in 64 KiB fragments, 27 in 128 KiB ones, the rendezvous's 256 KiB placed frames 17;
 *       BENCHMARKS.md, "tcp's fragments twice as large").</li>
 * </ul>
 *
 * @param seconds the line's value at size 0, seconds
 * @param perByte its growth per byte of the message, seconds
 */
public record RndvSurcharge(double seconds, double perByte) {

    /** None: a rendezvous and eager cost what the lane's figures say (the static estimates; a profile without it). */
    public static final RndvSurcharge NONE = new RndvSurcharge(0, 0);

    public RndvSurcharge {
        if (!Double.isFinite(seconds) || !Double.isFinite(perByte)) {
            throw new IllegalArgumentException("a rendezvous surcharge needs finite figures, got " + seconds + " s + "
                    + perByte + " s/B");
        }
    }

    /** What a {@code size}-byte rendezvous is charged, seconds: the line where above 0, else 0. */
    public double at(long size) {
        return Math.max(0, seconds + perByte * size);
    }

    /** What {@code size} bytes of eager fragments are charged, seconds: the line's depth where below 0, else 0. */
    public double eagerAt(long size) {
        return Math.max(0, -(seconds + perByte * size));
    }
}
