package io.nucx.protocol;

import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelPromise;
import io.netty.channel.embedded.EmbeddedChannel;
import io.nucx.protocol.select.ProtoCandidate;
import io.nucx.protocol.select.Protocol;
import io.nucx.protocol.select.SelectionKey;
import io.nucx.protocol.tag.RndvScheme;
import io.nucx.transport.AmFrame;
import io.nucx.transport.Capability;
import io.nucx.transport.IfaceAttributes;
import io.nucx.transport.cma.CmaChannel;
import io.nucx.transport.rma.RmaLane;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.LongPredicate;

/**
 * What an endpoint gives its protocol codecs, for codecs under test on an {@link EmbeddedChannel}: a lane
 * configuration, an RMA lane (a real cma channel, usually to this very process, registered on the channel's loop, or
 * none), and hooks that record what the codec asked of the endpoint: frames written below the pipeline
 * ({@link #writeDirect}), the end of a linger, RMA failures. Loop only, as the real endpoint.
 */
public final class TestEndpoint implements EndpointServices {

    /** The peer worker's uuid. */
    public static final long PEER_UUID = 0x77;

    private final EmbeddedChannel channel;
    private final EndpointConfig config;
    private SelectionKey.Locality locality = SelectionKey.Locality.INTER_NODE;
    private RmaLane rma;
    private boolean acceptsOffers = true;
    private long sendTag;
    private LongPredicate toPipeline = t -> false;
    private long closeWaitNanos = TimeUnit.SECONDS.toNanos(1);
    private boolean directWritesComplete = true;
    private final List<AmFrame> directFrames = new ArrayList<>();
    private final List<ChannelPromise> directPromises = new ArrayList<>();
    private final List<String> rmaFailures = new ArrayList<>();
    private final List<Throwable> rmaFailureCauses = new ArrayList<>();
    private int lingerEnded;
    private MemoryBudget receiveBudget = MemoryBudget.unlimited();

    /** @param channel the channel the codecs sit in: direct writes' promises are of its loop */
    public TestEndpoint(EmbeddedChannel channel, EndpointConfig config) {
        this.channel = channel;
        this.config = config;
    }

    /** An AM lane with these limits, nothing else: no zero-copy, every payload copied by the transport. */
    public static EndpointConfig amLane(int maxShort, int maxBcopy) {
        return new EndpointConfig("test/lo", new IfaceAttributes(EnumSet.of(Capability.AM_SHORT, Capability.AM_BCOPY),
                maxShort, maxBcopy, 64, 1e-6, 0, 1e9, 0, 1e-7, 0));
    }

    /** Settings with every protocol of {@code protocols}, automatic thresholds and {@code scheme}. */
    public static ProtocolSettings settings(long maxMessageSize, RndvScheme scheme, List<Protocol> protocols) {
        return settings(maxMessageSize, ProtoCandidate.AUTO, scheme, protocols);
    }

    /** As {@link #settings(long, RndvScheme, List)}, with NUCX_ZCOPY_THRESH set. */
    public static ProtocolSettings settings(long maxMessageSize, long zcopyThresh, RndvScheme scheme,
                                            List<Protocol> protocols) {
        return new ProtocolSettings(maxMessageSize, ProtoCandidate.AUTO, zcopyThresh, ProtoCandidate.AUTO, false,
                scheme, protocols);
    }

    /** A worker's shared protocol state on {@code ch}'s loop (every embedded loop is always "in" its loop). */
    public static WorkerProtocols worker(EmbeddedChannel ch, ProtocolSettings settings) {
        return new WorkerProtocols(ch.eventLoop(), ByteBufAllocator.DEFAULT, settings, 0x66, new ProtocolCounters());
    }

    /** A cma lane to {@code pid}, registered on {@code ch}'s loop as the endpoint's RMA lane would be. */
    public static CmaChannel cmaLane(EmbeddedChannel ch, int pid) {
        CmaChannel lane = CmaChannel.toProcess(pid);
        ch.eventLoop().register(lane).syncUninterruptibly();
        return lane;
    }

    /**
     * A frame arriving from a lane: up {@code ch}'s pipeline as the endpoint fires it, on the loop, without running the
     * loop's pending tasks ({@link EmbeddedChannel#writeInbound} runs them, and with them every later RMA chunk, so a
     * transfer would look done in one turn). A codec's exception is rethrown, as the endpoint would see it.
     */
    public static void arrive(EmbeddedChannel ch, AmFrame frame) {
        ch.pipeline().fireChannelRead(frame);
        ch.checkException();
    }

    public TestEndpoint rma(RmaLane lane) {
        this.rma = lane;
        return this;
    }

    /** The RMA lane given to the codecs, or null. */
    public RmaLane rma() {
        return rma;
    }

    public TestEndpoint acceptsOffers(boolean accepts) {
        this.acceptsOffers = accepts;
        return this;
    }

    public TestEndpoint sendTag(long tag) {
        this.sendTag = tag;
        return this;
    }

    public TestEndpoint toPipeline(LongPredicate tags) {
        this.toPipeline = tags;
        return this;
    }

    public TestEndpoint locality(SelectionKey.Locality l) {
        this.locality = l;
        return this;
    }

    public TestEndpoint closeWait(long nanos) {
        this.closeWaitNanos = nanos;
        return this;
    }

    /**
     * Whether {@link #writeDirect} completes its future at once (a live lane that took the frame), or leaves it to
     * the test ({@link #directPromises()}).
     */
    public TestEndpoint directWritesComplete(boolean complete) {
        this.directWritesComplete = complete;
        return this;
    }

    /** Frames written below the pipeline, in order; the test releases what it takes (see {@link #releaseAll}). */
    public List<AmFrame> directFrames() {
        return directFrames;
    }

    /** Their futures, in the same order. */
    public List<ChannelPromise> directPromises() {
        return directPromises;
    }

    /** "what: cause message" of each RMA failure reported. */
    public List<String> rmaFailures() {
        return rmaFailures;
    }

    public List<Throwable> rmaFailureCauses() {
        return rmaFailureCauses;
    }

    /** How many times a codec said its linger is over. */
    public int lingerEndedCount() {
        return lingerEnded;
    }

    /** Releases the frames written below the pipeline that the test did not take. */
    public void releaseAll() {
        directFrames.forEach(AmFrame::release);
        directFrames.clear();
    }

    // ------------------------------------------------------------ EndpointServices

    @Override
    public EndpointConfig endpointConfig() {
        return config;
    }

    @Override
    public long peerUuid() {
        return PEER_UUID;
    }

    @Override
    public SelectionKey.Locality locality() {
        return locality;
    }

    @Override
    public RmaLane rmaLane(Capability capability) {
        return rma;
    }

    @Override
    public boolean acceptsOffers() {
        return acceptsOffers;
    }

    @Override
    public ChannelFuture writeDirect(AmFrame frame) {
        directFrames.add(frame);
        ChannelPromise p = channel.newPromise();
        directPromises.add(p);
        if (directWritesComplete) {
            p.setSuccess();
        }
        return p;
    }

    @Override
    public void lingerEnded() {
        lingerEnded++;
    }

    @Override
    public long closeWaitNanos() {
        return closeWaitNanos;
    }

    @Override
    public void rmaFailed(String what, Throwable cause) {
        rmaFailures.add(what + ": " + cause.getMessage());
        rmaFailureCauses.add(cause);
    }

    @Override
    public long sendTag() {
        return sendTag;
    }

    @Override
    public boolean deliversToPipeline(long tag) {
        return toPipeline.test(tag);
    }

    @Override
    public MemoryBudget receiveBudget() {
        return receiveBudget;
    }

    /** Gives the endpoint a bounded receive budget. */
    public TestEndpoint receiveBudget(MemoryBudget budget) {
        this.receiveBudget = budget;
        return this;
    }
}
