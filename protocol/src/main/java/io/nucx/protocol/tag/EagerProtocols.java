package io.nucx.protocol.tag;

import io.nucx.protocol.EagerSurcharge;
import io.nucx.protocol.ProtocolFamily;
import io.nucx.protocol.RndvSurcharge;
import io.nucx.protocol.select.LinearFunc;
import io.nucx.protocol.select.PerfFactor;
import io.nucx.protocol.select.ProbeParams;
import io.nucx.protocol.select.ProtoCandidate;
import io.nucx.protocol.select.ProtoPerf;
import io.nucx.protocol.select.Protocol;
import io.nucx.protocol.select.SelectionKey;
import io.nucx.transport.Capability;
import io.nucx.transport.IfaceAttributes;

import java.util.List;
import java.util.function.Consumer;

/**
 * The eager tag protocols as the selection engine sees them. Each probe declares facts (range, overheads, copy and
 * wire slopes, per-fragment cost) and one shared model turns them into a {@link ProtoPerf}, as UCX's
 * {@code ucp_proto_single_probe} / {@code ucp_proto_multi_probe} do. How they send is {@link EagerSender}, how they arrive {@link EagerReceiver}.
 *
 * <p><b>Copies, as the code makes them.</b> The copy protocols ({@code egr/short}, {@code egr/.../bcopy},
 * {@code egrsnc/...}) are charged one copy of the message on the receiver's cpu (copy-out), and one on the sender's
 * (copy-in) where a copy of the sender's memory is made: the lane's transport makes it where it copies payloads into
 * memory of its own ({@link IfaceAttributes#copiesAmPayload}: shm's ring write, tcp's heap payloads, which the socket
 * channel copies into direct memory), and {@link EagerSender} makes it for every self payload, which the receiver
 * would otherwise get as it is. tcp's native payloads leave from the sender's buffer (a gathering write; the encoder
 * copies only those up to 1 KiB next to the header, which the model leaves out) and the write completes once the
 * socket has copied them into the kernel, which the lane's bandwidth counts: no copy-in. Either way a copy send
 * completes once its frames are written, and the sender's buffer is free then.
 *
 * <p>The zero-copy protocols ({@code egr/single/zcopy}, {@code egr/multi/zcopy}) send retained slices of the sender's
 * buffer and pay no copy-in; their send completes only when the receiver acknowledges that the whole message arrived,
 * which costs its send overhead (cpu-remote), our receive overhead (cpu) and one more latency (UCX's fast-completion
 * zcopy charge). They are offered only where the transport writes the payload from the sender's memory: lanes with
 * {@link Capability#AM_ZCOPY} (tcp; not shm or self, as in UCX), native memory, payloads over the lane's
 * {@code amCopyMax}. On such a lane the copy protocols send native memory without a copy too, so zero-copy costs one
 * acknowledgement more and the engine does not pick it by itself (UCT tcp's bcopy packs into a buffer of its own,
 * which is why UCX's zero-copy pays there); {@code NUCX_ZCOPY_THRESH} or {@code NUCX_PROTOS} still choose it, for a
 * send that should complete only once the receiver has the data. Where a copy-in is charged, zero-copy pays where the
 * saved copy outweighs the acknowledgement, {@code (2 overhead + latency) x copy bandwidth}: an intersection in the
 * envelope, not a constant.
 *
 * <p>A calibrated profile may charge the multi-fragment protocols more than their factors sum to: where calibration
 * measured them dearer against a rendezvous than the model prices the two ({@link RndvSurcharge#eagerAt}: tcp's
 * fragments, each read as a header and a payload, against the rendezvous's larger placed frames).
 */
public final class EagerProtocols {

    /** UCX's protocol overhead knobs: one-fragment 5 ns, multi-fragment 10 ns, software request 40 ns. */
    public static final double SINGLE_OVERHEAD = 5e-9;
    public static final double MULTI_OVERHEAD = 10e-9;
    public static final double REQUEST_OVERHEAD = 40e-9;

    /** {@code egr/short}: one frame, no request; sizes up to the lane's max short. */
    public static final Protocol SHORT = new Eager("egr/short", "eager short", Kind.SHORT);
    /** {@code egr/single/bcopy}: one frame up to the lane's max bcopy. */
    public static final Protocol SINGLE_BCOPY = new Eager("egr/single/bcopy",
            "eager copy-in copy-out", Kind.SINGLE);
    /** {@code egr/multi/bcopy}: FIRST + MIDDLE fragments, any size. */
    public static final Protocol MULTI_BCOPY = new Eager("egr/multi/bcopy",
            "multi-frag eager copy-in copy-out", Kind.MULTI);

    /**
     * {@code egr/single/zcopy}: one EAGER_ZCOPY_ONLY frame from the sender's buffer; completes when the receiver
     * acknowledges its arrival.
     */
    public static final Protocol SINGLE_ZCOPY = new Eager("egr/single/zcopy",
            "eager zero-copy copy-out", Kind.SINGLE_ZCOPY);
    /**
     * {@code egr/multi/zcopy}: EAGER_ZCOPY_FIRST + EAGER_MIDDLE fragments from the sender's buffer; completes when the
     * receiver acknowledges that every fragment arrived.
     */
    public static final Protocol MULTI_ZCOPY = new Eager("egr/multi/zcopy",
            "multi-frag eager zero-copy copy-out", Kind.MULTI_ZCOPY);

    /** {@code egrsnc/single/bcopy}: one frame; the send completes when the receiver acknowledges the match. */
    public static final Protocol SYNC_SINGLE_BCOPY = new Eager("egrsnc/single/bcopy",
            "eager synchronous copy-in copy-out", Kind.SYNC_SINGLE);
    /** {@code egrsnc/multi/bcopy}: fragments; completes when the receiver acknowledges the match. */
    public static final Protocol SYNC_MULTI_BCOPY = new Eager("egrsnc/multi/bcopy",
            "multi-frag eager synchronous copy-in copy-out", Kind.SYNC_MULTI);

    /**
     * Registration order: ties go to the earlier, so a copy protocol wins a tie with a zero-copy one (its send
     * completes without waiting for the receiver).
     */
    public static final List<Protocol> ALL = List.of(SHORT, SINGLE_BCOPY, MULTI_BCOPY, SINGLE_ZCOPY, MULTI_ZCOPY,
            SYNC_SINGLE_BCOPY, SYNC_MULTI_BCOPY);

    /**
     * The tag eager family: these protocols, the active messages they send and answer, and their codec
     * ({@link EagerCodec}) with the pipeline's {@link TagOrder} above it.
     */
    public static final ProtocolFamily FAMILY = new ProtocolFamily("tag/eager", ALL, EagerCodec.AM_IDS,
            (pipeline, endpoint, worker) -> {
                EagerCodec codec = new EagerCodec(endpoint, worker);
                pipeline.addLast(EagerCodec.NAME, codec);
                pipeline.addLast(TagOrder.NAME, new TagOrder());
                return codec;
            });

    /** UCX's priority of the copy protocols' threshold (NUCX_BCOPY_THRESH). */
    static final int BCOPY_PRIORITY = 20;
    /** UCX's priority of the zero-copy protocols' threshold (NUCX_ZCOPY_THRESH): above bcopy, below rendezvous. */
    static final int ZCOPY_PRIORITY = 30;

    private enum Kind {
        SHORT, SINGLE, MULTI, SINGLE_ZCOPY, MULTI_ZCOPY, SYNC_SINGLE, SYNC_MULTI;

        boolean sync() {
            return this == SYNC_SINGLE || this == SYNC_MULTI;
        }

        boolean zcopy() {
            return this == SINGLE_ZCOPY || this == MULTI_ZCOPY;
        }
    }

    private EagerProtocols() {
    }

    private record Eager(String name, String description, Kind kind) implements Protocol {
        @Override
        public void probe(ProbeParams params, Consumer<ProtoCandidate> out) {
            long key = params.key();
            SelectionKey.Operation op = SelectionKey.operation(key);
            // A stream write or an active message is carried like a tagged one (STREAM_* / AM_* first frames instead
            // of EAGER_*); neither has a synchronous form.
            boolean serves = kind.sync() ? op == SelectionKey.Operation.TAG_SEND_SYNC
                    : op == SelectionKey.Operation.TAG_SEND || op == SelectionKey.Operation.STREAM_SEND
                    || op == SelectionKey.Operation.AM_SEND;
            if (!serves || SelectionKey.datatype(key) == SelectionKey.DatatypeClass.GENERIC) {
                return;
            }
            IfaceAttributes lane = params.endpoint().amLaneAttrs();
            // Where the transport writes the payload from our memory: with AM_ZCOPY, not heap memory (the socket
            // channel copies it into direct memory). The copy protocols send from it there too (their write completes
            // once the socket has copied it, IfaceAttributes.freesPayloadOnWrite): no copy-in of ours, so zero-copy
            // differs only by its acknowledgement.
            boolean fromSendersMemory = lane.has(Capability.AM_ZCOPY)
                    && SelectionKey.memoryType(key) != SelectionKey.MemoryType.HEAP;
            long min = 0;
            if (kind.zcopy()) {
                // Only there, above the size the transport copies anyway.
                if (!fromSendersMemory) {
                    return;
                }
                min = (long) lane.amCopyMax() + 1;
            }
            double copy = 1 / params.copyBandwidth(lane);
            double copyIn = kind.zcopy() || fromSendersMemory ? 0 : copy;
            // A lane whose payloads move by the two copies alone (shm's ring) has no wire time besides them.
            double wire = lane.copiesAreTheTransfer() ? 0 : 1 / lane.bandwidth();
            double ovh = lane.overheadSeconds();
            ProtoPerf perf = new ProtoPerf();
            long thresh = kind == Kind.SHORT ? ProtoCandidate.AUTO
                    : kind.zcopy() ? params.zcopyThresh() : params.bcopyThresh();
            int priority = kind == Kind.SHORT ? 0 : kind.zcopy() ? ZCOPY_PRIORITY : BCOPY_PRIORITY;
            switch (kind) {
                case SHORT -> {
                    long max = lane.maxShort() - EagerHeaders.ONLY_LENGTH;
                    if (max < 0) {
                        return;
                    }
                    single(perf, 0, max, ovh, copyIn, copy, wire, lane.latencySeconds(), 0);
                }
                case SINGLE, SYNC_SINGLE, SINGLE_ZCOPY -> {
                    long max = lane.maxBcopy() - (kind == Kind.SINGLE ? EagerHeaders.ONLY_LENGTH
                            : kind.sync() ? EagerHeaders.SYNC_ONLY_LENGTH : EagerHeaders.ZCOPY_ONLY_LENGTH);
                    if (max < min) {
                        return;
                    }
                    single(perf, min, max, ovh, copyIn, copy, wire, lane.latencySeconds(), REQUEST_OVERHEAD);
                }
                case MULTI, SYNC_MULTI, MULTI_ZCOPY -> {
                    // Per-fragment costs are amortised into the slope (UCX's pipeline extrapolation).
                    double frag = lane.maxBcopy() - EagerHeaders.MIDDLE_LENGTH;
                    long max = ProtoPerf.MAX_SIZE;
                    perf.add(min, max, PerfFactor.LOCAL_CPU, new LinearFunc(ovh + REQUEST_OVERHEAD + MULTI_OVERHEAD,
                            copyIn + (ovh + MULTI_OVERHEAD) / frag));
                    perf.add(min, max, PerfFactor.REMOTE_CPU, new LinearFunc(ovh, copy + ovh / frag));
                    perf.add(min, max, PerfFactor.LOCAL_TL, LinearFunc.slope(wire));
                    perf.add(min, max, PerfFactor.LATENCY, LinearFunc.constant(lane.latencySeconds()));
                    // What calibration measured these fragments to cost beyond the model against a rendezvous.
                    RndvSurcharge measured = params.endpoint().rndvSurcharge();
                    RndvProtocols.positivePart(perf, new LinearFunc(-measured.seconds(), -measured.perByte()), min,
                            max);
                }
                default -> throw new IllegalStateException(kind.toString());
            }
            List<ProtoPerf.Segment> segs = perf.segments();
            long end = segs.get(segs.size() - 1).end();
            EagerSurcharge measured = params.endpoint().eagerSurcharge();
            if (measured.seconds() > 0 && Math.max(min, measured.from()) <= end) {
                // What calibration measured a copy send to cost beyond these figures: one message's, whatever its
                // fragments.
                perf.add(Math.max(min, measured.from()), end, PerfFactor.LATENCY,
                        LinearFunc.constant(measured.seconds()));
            }
            if (kind.sync() || kind.zcopy()) {
                // The acknowledgement (of the match, or of the arrival): the receiver sends it, we receive it, and it
                // crosses the wire once more before the send completes.
                perf.add(min, end, PerfFactor.REMOTE_CPU, LinearFunc.constant(ovh));
                perf.add(min, end, PerfFactor.LOCAL_CPU, LinearFunc.constant(ovh));
                perf.add(min, end, PerfFactor.LATENCY, LinearFunc.constant(lane.latencySeconds()));
            }
            out.accept(new ProtoCandidate(this, thresh, priority, perf, params.endpoint().amLane()));
        }

        /** One frame over {@code [min, max]}: send and receive overheads, the copies, the wire, one latency. */
        private static void single(ProtoPerf perf, long min, long max, double ovh, double copyIn, double copyOut,
                                   double wire, double latency, double extra) {
            perf.add(min, max, PerfFactor.LOCAL_CPU, new LinearFunc(ovh + SINGLE_OVERHEAD + extra, copyIn));
            perf.add(min, max, PerfFactor.REMOTE_CPU, new LinearFunc(ovh, copyOut));
            perf.add(min, max, PerfFactor.LOCAL_TL, LinearFunc.slope(wire));
            perf.add(min, max, PerfFactor.LATENCY, LinearFunc.constant(latency));
        }

        @Override
        public String toString() {
            return name;
        }
    }
}
