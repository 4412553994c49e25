package io.nucx.transport;

import io.netty.handler.codec.TooLongFrameException;

import java.util.EnumSet;
import java.util.Set;

/**
 * What an iface can do and what it costs, as UCT's {@code uct_iface_attr_t}: capability flags, size limits per
 * operation, and the performance model the lane and protocol selection use.
 *
 * @param capabilities    capability flags
 * @param maxShort        largest AM_SHORT payload (header included), bytes
 * @param maxBcopy        largest AM_BCOPY payload of one frame (header included), bytes
 * @param maxHeader       largest active-message header, bytes
 * @param latencySeconds  latency constant {@code c} of {@code c + m * numEps}, seconds
 * @param latencyPerEp    latency growth {@code m} per endpoint, seconds
 * @param bandwidthDedicated bytes/second this iface has to itself
 * @param bandwidthShared bytes/second shared with other processes on the device
 * @param overheadSeconds CPU time to send or receive one message, seconds
 * @param priority        tie-breaker between equal scores (higher wins)
 * @param maxZcopy        largest PUT/GET zero-copy transfer, bytes (0 without PUT_ZCOPY/GET_ZCOPY)
 * @param amCopyMax       largest AM payload the transport copies into memory of its own when it is written (tcp: 1 KiB,
 *                        next to the header; shm: every payload, {@link Integer#MAX_VALUE}: the ring write is the
 *                        copy). A larger payload leaves from the caller's buffer (tcp's gathering write, which is what
 *                        {@link Capability#AM_ZCOPY} offers; heap buffers excepted, which a socket channel copies into
 *                        direct memory as they are written), and the write completes once the socket has copied it
 *                        into the kernel; or it is handed to the receiver as it is (self: 0), so a sender that must be
 *                        done with the buffer when the write completes copies it first ({@link #freesPayloadOnWrite})
 * @param rmaSegment      bytes a zero-copy GET or PUT moves per transport call (UCX's {@code SEG_SIZE} of cma: one
 *                        {@code process_vm_readv} per 512 KiB); the per-operation overhead is paid once per segment.
 *                        {@code maxZcopy} unless the transport says otherwise (one call per operation)
 * @param regCostSeconds  memory registration cost constant {@code c} of {@code c + m * size} (UCT's md
 *                        {@code reg_cost}), seconds: what exposing a buffer for a peer's zero-copy GET or PUT costs
 * @param regCostPerByte  memory registration growth {@code m}, seconds per byte
 * @param maxPlaced       largest frame (header included) the iface carries, both ways, when its receiver places the
 *                        payload into its destination as it arrives ({@link AmFrame#FLAG_PLACED}; tcp reading straight
 *                        into the receive buffer: UCT tcp's PUT_ZCOPY of a whole rendezvous); 0 when it does not
 * @param copyBandwidth   bytes/second at which a payload is copied into the transport's memory and out of it, when those
 *                        two copies are the whole transfer (shm: the sender copies into the ring, the receiver out of
 *                        it, and no byte moves otherwise), so the cost model charges them at this rate and no wire
 *                        time besides; 0 when the transport does not say (tcp: the worker's memcpy figure for the
 *                        copies, and the bandwidth for the kernel's transfer)
 * @param bulkFrom        size, bytes, from which a zero-copy GET or PUT runs at {@code bulkBandwidth} instead of
 *                        {@link #bandwidth}: where the transfer no longer fits the caches (cma's read by one core runs
 *                        at 16-29 GB/s up to 512 KiB here and at 5-10 from 2 MiB on). {@link Long#MAX_VALUE}: one rate
 *                        for every size (the static estimates; calibration measures it)
 * @param bulkBandwidth   bytes/second of a zero-copy GET or PUT from {@code bulkFrom} on; 0 without a bulk rate
 */
public record IfaceAttributes(Set<Capability> capabilities, int maxShort, int maxBcopy, int maxHeader,
                              double latencySeconds, double latencyPerEp, double bandwidthDedicated,
                              double bandwidthShared, double overheadSeconds, int priority, long maxZcopy,
                              int amCopyMax, long rmaSegment, double regCostSeconds, double regCostPerByte,
                              int maxPlaced, double copyBandwidth, long bulkFrom, double bulkBandwidth) {

    /** Attributes whose zero-copy RMA runs at one rate for every size. */
    public IfaceAttributes(Set<Capability> capabilities, int maxShort, int maxBcopy, int maxHeader,
                           double latencySeconds, double latencyPerEp, double bandwidthDedicated,
                           double bandwidthShared, double overheadSeconds, int priority, long maxZcopy,
                           int amCopyMax, long rmaSegment, double regCostSeconds, double regCostPerByte,
                           int maxPlaced, double copyBandwidth) {
        this(capabilities, maxShort, maxBcopy, maxHeader, latencySeconds, latencyPerEp, bandwidthDedicated,
                bandwidthShared, overheadSeconds, priority, maxZcopy, amCopyMax, rmaSegment, regCostSeconds,
                regCostPerByte, maxPlaced, copyBandwidth, Long.MAX_VALUE, 0);
    }

    /** Attributes that state no copy rate of their own ({@code copyBandwidth} 0). */
    public IfaceAttributes(Set<Capability> capabilities, int maxShort, int maxBcopy, int maxHeader,
                           double latencySeconds, double latencyPerEp, double bandwidthDedicated,
                           double bandwidthShared, double overheadSeconds, int priority, long maxZcopy,
                           int amCopyMax, long rmaSegment, double regCostSeconds, double regCostPerByte,
                           int maxPlaced) {
        this(capabilities, maxShort, maxBcopy, maxHeader, latencySeconds, latencyPerEp, bandwidthDedicated,
                bandwidthShared, overheadSeconds, priority, maxZcopy, amCopyMax, rmaSegment, regCostSeconds,
                regCostPerByte, maxPlaced, 0);
    }

    /** Attributes of an iface that does not place payloads (no frame over {@code maxBcopy}). */
    public IfaceAttributes(Set<Capability> capabilities, int maxShort, int maxBcopy, int maxHeader,
                           double latencySeconds, double latencyPerEp, double bandwidthDedicated,
                           double bandwidthShared, double overheadSeconds, int priority, long maxZcopy,
                           int amCopyMax, long rmaSegment, double regCostSeconds, double regCostPerByte) {
        this(capabilities, maxShort, maxBcopy, maxHeader, latencySeconds, latencyPerEp, bandwidthDedicated,
                bandwidthShared, overheadSeconds, priority, maxZcopy, amCopyMax, rmaSegment, regCostSeconds,
                regCostPerByte, 0);
    }

    /** Attributes whose memory registration costs nothing (tcp, shm and self register nothing; cma only packs a key). */
    public IfaceAttributes(Set<Capability> capabilities, int maxShort, int maxBcopy, int maxHeader,
                           double latencySeconds, double latencyPerEp, double bandwidthDedicated,
                           double bandwidthShared, double overheadSeconds, int priority, long maxZcopy,
                           int amCopyMax, long rmaSegment) {
        this(capabilities, maxShort, maxBcopy, maxHeader, latencySeconds, latencyPerEp, bandwidthDedicated,
                bandwidthShared, overheadSeconds, priority, maxZcopy, amCopyMax, rmaSegment, 0, 0);
    }

    /** Attributes whose zero-copy RMA, if any, moves a whole operation per transport call. */
    public IfaceAttributes(Set<Capability> capabilities, int maxShort, int maxBcopy, int maxHeader,
                           double latencySeconds, double latencyPerEp, double bandwidthDedicated,
                           double bandwidthShared, double overheadSeconds, int priority, long maxZcopy,
                           int amCopyMax) {
        this(capabilities, maxShort, maxBcopy, maxHeader, latencySeconds, latencyPerEp, bandwidthDedicated,
                bandwidthShared, overheadSeconds, priority, maxZcopy, amCopyMax, maxZcopy);
    }

    /** Attributes of an iface without zero-copy RMA that copies every AM payload it writes. */
    public IfaceAttributes(Set<Capability> capabilities, int maxShort, int maxBcopy, int maxHeader,
                           double latencySeconds, double latencyPerEp, double bandwidthDedicated,
                           double bandwidthShared, double overheadSeconds, int priority) {
        this(capabilities, maxShort, maxBcopy, maxHeader, latencySeconds, latencyPerEp, bandwidthDedicated,
                bandwidthShared, overheadSeconds, priority, 0);
    }

    /** Attributes of an iface that copies every AM payload it writes (or has no AM at all). */
    public IfaceAttributes(Set<Capability> capabilities, int maxShort, int maxBcopy, int maxHeader,
                           double latencySeconds, double latencyPerEp, double bandwidthDedicated,
                           double bandwidthShared, double overheadSeconds, int priority, long maxZcopy) {
        this(capabilities, maxShort, maxBcopy, maxHeader, latencySeconds, latencyPerEp, bandwidthDedicated,
                bandwidthShared, overheadSeconds, priority, maxZcopy, Integer.MAX_VALUE);
    }

    public IfaceAttributes {
        if (amCopyMax < 0) {
            throw new IllegalArgumentException("amCopyMax must be >= 0, got " + amCopyMax);
        }
        if (rmaSegment < 0 || (maxZcopy > 0 && rmaSegment == 0)) {
            throw new IllegalArgumentException("rmaSegment must be > 0 with zero-copy RMA, got " + rmaSegment);
        }
        if (maxPlaced < 0) {
            throw new IllegalArgumentException("maxPlaced must be >= 0, got " + maxPlaced);
        }
        if (!(copyBandwidth >= 0) || Double.isInfinite(copyBandwidth)) {
            throw new IllegalArgumentException("copyBandwidth must be >= 0 and finite, got " + copyBandwidth);
        }
        if (!(regCostSeconds >= 0) || !(regCostPerByte >= 0)) {
            throw new IllegalArgumentException("registration cost must be >= 0, got " + regCostSeconds + " s + "
                    + regCostPerByte + " s/B");
        }
        if (bulkFrom < 1 || (bulkFrom != Long.MAX_VALUE
                && (!(bulkBandwidth > 0) || Double.isInfinite(bulkBandwidth)))) {
            throw new IllegalArgumentException("a bulk rate needs a size >= 1 and a bandwidth > 0 and finite, got "
                    + bulkFrom + " B and " + bulkBandwidth + " B/s");
        }
        capabilities = capabilities.isEmpty() ? EnumSet.noneOf(Capability.class) : EnumSet.copyOf(capabilities);
    }

    public boolean has(Capability c) {
        return capabilities.contains(c);
    }

    /** The same attributes with the AM size limits narrowed, e.g. to the smaller of two peers' limits. */
    public IfaceAttributes withAmLimits(int maxShort, int maxBcopy) {
        return new IfaceAttributes(capabilities, maxShort, maxBcopy, maxHeader, latencySeconds, latencyPerEp,
                bandwidthDedicated, bandwidthShared, overheadSeconds, priority, maxZcopy, amCopyMax, rmaSegment,
                regCostSeconds, regCostPerByte, maxPlaced, copyBandwidth, bulkFrom, bulkBandwidth);
    }

    /** The same attributes, placing frames up to {@code maxPlaced} bytes (0: none). */
    public IfaceAttributes withMaxPlaced(int maxPlaced) {
        return new IfaceAttributes(capabilities, maxShort, maxBcopy, maxHeader, latencySeconds, latencyPerEp,
                bandwidthDedicated, bandwidthShared, overheadSeconds, priority, maxZcopy, amCopyMax, rmaSegment,
                regCostSeconds, regCostPerByte, maxPlaced, copyBandwidth, bulkFrom, bulkBandwidth);
    }

    /** The same attributes, whose payloads move by two copies at {@code copyBandwidth} bytes/s (0: not stated). */
    public IfaceAttributes withCopyBandwidth(double copyBandwidth) {
        return new IfaceAttributes(capabilities, maxShort, maxBcopy, maxHeader, latencySeconds, latencyPerEp,
                bandwidthDedicated, bandwidthShared, overheadSeconds, priority, maxZcopy, amCopyMax, rmaSegment,
                regCostSeconds, regCostPerByte, maxPlaced, copyBandwidth, bulkFrom, bulkBandwidth);
    }

    /** Whether the transport's payloads move by the two copies alone, at {@link #copyBandwidth}. */
    public boolean copiesAreTheTransfer() {
        return copyBandwidth > 0;
    }

    /**
     * The same capabilities and limits with other performance figures, e.g. measured on this machine by calibration
     * instead of the transport's static estimates. The bandwidth becomes dedicated (a measured figure already is what
     * this process gets).
     */
    public IfaceAttributes withPerf(double latencySeconds, double overheadSeconds, double bandwidth,
                                    double regCostSeconds, double regCostPerByte) {
        if (!(latencySeconds >= 0) || !(overheadSeconds >= 0) || !(bandwidth > 0) || Double.isInfinite(bandwidth)) {
            throw new IllegalArgumentException("latency and overhead must be >= 0 and bandwidth > 0 and finite, got "
                    + latencySeconds + " s, " + overheadSeconds + " s, " + bandwidth + " B/s");
        }
        return new IfaceAttributes(capabilities, maxShort, maxBcopy, maxHeader, latencySeconds, latencyPerEp,
                bandwidth, 0, overheadSeconds, priority, maxZcopy, amCopyMax, rmaSegment, regCostSeconds,
                regCostPerByte, maxPlaced, copyBandwidth, bulkFrom, bulkBandwidth);
    }

    /**
     * The same attributes, whose zero-copy GET and PUT run at {@code bulkBandwidth} bytes/s from {@code bulkFrom}
     * bytes on (measured by calibration: where a transfer outgrows the caches).
     */
    public IfaceAttributes withBulk(long bulkFrom, double bulkBandwidth) {
        return new IfaceAttributes(capabilities, maxShort, maxBcopy, maxHeader, latencySeconds, latencyPerEp,
                bandwidthDedicated, bandwidthShared, overheadSeconds, priority, maxZcopy, amCopyMax, rmaSegment,
                regCostSeconds, regCostPerByte, maxPlaced, copyBandwidth, bulkFrom, bulkBandwidth);
    }

    /** Whether zero-copy GET and PUT have a second, bulk rate ({@code bulkFrom} on). */
    public boolean hasBulkRate() {
        return bulkFrom != Long.MAX_VALUE;
    }

    /**
     * Whether the transport copies a {@code length}-byte AM payload into memory of its own when it is written, so
     * the caller's buffer is free once the write completes (see {@code amCopyMax}).
     *
     * @param heap whether the payload is heap memory: an {@link Capability#AM_ZCOPY} transport writes only native
     *             memory from the caller's buffer (the GC moves heap arrays), so it copies heap payloads of any size
     */
    public boolean copiesAmPayload(int length, boolean heap) {
        return length <= amCopyMax || (heap && has(Capability.AM_ZCOPY));
    }

    /**
     * Whether the caller's buffer is free once the write of a {@code length}-byte AM payload completes, so a send that
     * must be done with it then needs no copy of its own: the transport copies the payload as it writes it
     * ({@link #copiesAmPayload}), or writes it from the caller's memory and completes the write only once it no longer
     * needs it ({@link Capability#AM_ZCOPY}, UCT's zero-copy completion: tcp's socket has copied it into the kernel
     * by then). False only where a payload is handed to the receiver as it is (self).
     */
    public boolean freesPayloadOnWrite(int length, boolean heap) {
        return copiesAmPayload(length, heap) || has(Capability.AM_ZCOPY);
    }

    /** Whether a frame with a header of {@code headerLength} bytes and {@code length} in all is within the limits. */
    public boolean fits(int headerLength, int length) {
        return headerLength <= maxHeader && length <= maxBcopy;
    }

    /**
     * Checks that {@code frame} fits this iface: its header at most {@code maxHeader}, header and payload at most
     * {@code maxBcopy} (what protocols fragment to). Lanes check on the sender's side, so a frame too large fails its
     * own write, with this message, and the lane goes on. A {@link AmFrame#FLAG_PLACED} frame may be up to
     * {@code maxPlaced} instead.
     *
     * @param lane names the lane in the error
     * @throws TooLongFrameException naming the frame's sizes and the limits
     */
    public void checkFrame(AmFrame frame, Object lane) {
        int header = frame.header().readableBytes();
        boolean placed = (frame.flags() & AmFrame.FLAG_PLACED) != 0;
        int max = placed ? Math.max(maxBcopy, maxPlaced) : maxBcopy;
        if (header > maxHeader || frame.length() > max) {
            throw new TooLongFrameException("frame of " + frame.length() + " bytes (header " + header + ", am id "
                    + frame.amId() + (placed ? ", placed" : "") + ") exceeds the limits of " + lane + ": header <= "
                    + maxHeader + ", header + payload <= " + max + " bytes");
        }
    }

    /** Bandwidth as UCX's v2 model uses it: dedicated + shared / min(ppn, 8), with one process per node here. */
    public double bandwidth() {
        return bandwidthDedicated + bandwidthShared;
    }
}
