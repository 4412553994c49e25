package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.util.ReferenceCountUtil;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.EndpointConfig;
import io.nucx.protocol.KeyBundle;
import io.nucx.protocol.ProtocolRegistry;
import io.nucx.protocol.TestEndpoint;
import io.nucx.protocol.WorkerProtocols;
import io.nucx.transport.AmFrame;
import io.nucx.transport.cma.Cma;
import io.nucx.transport.cma.CmaChannel;

import java.nio.channels.ClosedChannelException;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A {@link RndvCodec} on an embedded endpoint, with its worker, its {@link TestEndpoint} and, when cma runs here, a
 * cma lane to this very process as its RMA lane; plus the rendezvous frames a test sends it. {@link #close} ends it as
 * an endpoint ends (parking what the PUT safety rule still holds) and checks nothing was left unread or unreleased.
 */
final class RndvEndpoint implements AutoCloseable {

    final EmbeddedChannel ch = new EmbeddedChannel();
    final WorkerProtocols worker;
    final TestEndpoint endpoint;
    final RndvCodec codec;
    final PostedReceives receives;
    /** The RMA lane given to the codec, or null when cma cannot run here. */
    CmaChannel lane;
    private final List<ByteBuf> held = new ArrayList<>();

    /** @param cmaToSelf give the codec a cma lane to this process (when cma is available) */
    RndvEndpoint(RndvScheme scheme, EndpointConfig config, boolean cmaToSelf) {
        worker = TestEndpoint.worker(ch, TestEndpoint.settings(1 << 30, scheme, ProtocolRegistry.DEFAULT.protocols()));
        endpoint = new TestEndpoint(ch, config);
        if (cmaToSelf && Cma.availability().isAvailable()) {
            lane(Cma.pid());
        }
        codec = new RndvCodec(endpoint, worker);
        ch.pipeline().addLast(codec);
        receives = new PostedReceives(worker.matcher(), ch.eventLoop());
    }

    /** The AM lane used unless a test needs another: max short 8 KiB, max bcopy 64 KiB. */
    static EndpointConfig defaultLane() {
        return TestEndpoint.amLane(8192, 65536);
    }

    /** Replaces the RMA lane by a cma lane to {@code pid}. */
    CmaChannel lane(int pid) {
        if (lane != null) {
            lane.close();
        }
        lane = TestEndpoint.cmaLane(ch, pid);
        endpoint.rma(lane);
        return lane;
    }

    /** A frame arriving from a lane, without running the loop's pending tasks ({@link TestEndpoint#arrive}). */
    void arrive(AmFrame frame) {
        TestEndpoint.arrive(ch, frame);
    }

    /**
     * Runs loop turns (the queued tasks, then the timers due) until {@code done}, and returns how many it took: the
     * cma lane moves {@code Cma.TURN_BYTES} per turn, a bounce buffer one chunk. At most 1,000. Not with the time
     * frozen: a timer set at once would then be due within the same turn.
     */
    int turnsUntil(BooleanSupplier done) {
        int turns = 0;
        while (!done.getAsBoolean()) {
            assertTrue(turns < 1000, "not done after 1,000 loop turns");
            ch.runPendingTasks();
            turns++;
        }
        return turns;
    }

    /** {@code b}, released when the endpoint closes (a receive or receiver's buffer the test owns). */
    ByteBuf hold(ByteBuf b) {
        held.add(b);
        return b;
    }

    /** A zeroed native buffer of {@code n} bytes, held. */
    ByteBuf directBuffer(int n) {
        return hold(ByteBufAllocator.DEFAULT.directBuffer(n, n).writeZero(n)).clear();
    }

    @Override
    public void close() {
        receives.close();
        worker.matcher().close(new ClosedChannelException());
        if (!codec.lingers()) {
            codec.endpointEnded(new ClosedChannelException());
        }
        if (codec.lingers()) { // a test that stopped half-way: keep what the safety rule holds, as a worker does
            codec.park();
        }
        held.forEach(ByteBuf::release);
        if (lane != null) {
            lane.close();
        }
        ch.runPendingTasks();
        endpoint.releaseAll();
        Object left = ch.readOutbound();
        ReferenceCountUtil.release(left);
        assertFalse(ch.finishAndReleaseAll());
        assertNull(left, "every frame the codec wrote was looked at");
    }

    // ------------------------------------------------------------ data and frames

    static byte[] pattern(long seed, int n) {
        byte[] b = new byte[n];
        new SplittableRandom(seed).nextBytes(b);
        return b;
    }

    /** A native copy of {@code data}, owned by whoever it is given to. */
    static ByteBuf direct(byte[] data) {
        return ByteBufAllocator.DEFAULT.directBuffer(data.length).writeBytes(data);
    }

    /** The readable bytes of {@code b}. */
    static byte[] bytes(ByteBuf b) {
        byte[] a = new byte[b.readableBytes()];
        b.getBytes(b.readerIndex(), a);
        return a;
    }

    /** Every byte of {@code b}'s capacity. */
    static byte[] memory(ByteBuf b) {
        byte[] a = new byte[b.capacity()];
        b.getBytes(0, a);
        return a;
    }

    /**
     * An RTS as a sender writes it; {@code key} (a transport's key, bundled as registered on the sender's device 0,
     * which the test endpoint's one rail reaches) null for a plain one.
     */
    static AmFrame rts(long tag, long senderReqId, long size, byte[] key) {
        return AmFrame.of(AmIds.RNDV_RTS, RndvHeaders.writeRts(Unpooled.buffer(), tag, senderReqId, size,
                bundle(key)));
    }

    /** An RTR as a receiver writes it; {@code key} (bundled as {@link #rts} does) null for a plain one. */
    static AmFrame rtr(long senderReq, long receiverReq, long size, byte[] key) {
        return AmFrame.of(AmIds.RNDV_RTR, RndvHeaders.writeRtr(Unpooled.buffer(), senderReq, receiverReq, size,
                bundle(key)));
    }

    /** {@code key} as the only key of a bundle, registered on device entry 0; null for null. */
    static byte[] bundle(byte[] key) {
        return key == null ? null : KeyBundle.pack(List.of(new KeyBundle.Key(0,
                key)));
    }

    /** The transport key of device entry 0 in the bundle {@code packed}. */
    static byte[] unbundle(ByteBuf packed) {
        byte[] key = KeyBundle.keyFor(KeyBundle.unpack(packed), 0);
        assertTrue(key != null, "no key of device entry 0 in the bundle");
        return key;
    }

    static AmFrame ats(long senderReq, int status) {
        return AmFrame.of(AmIds.RNDV_ATS, Unpooled.buffer(9).writeLongLE(senderReq).writeByte(status));
    }

    static AmFrame atp(long receiverReq, int status, long size) {
        return AmFrame.of(AmIds.RNDV_ATP, RndvHeaders.writeAtp(Unpooled.buffer(), receiverReq, status, size));
    }

    static AmFrame data(long receiverReq, long offset, ByteBuf payload) {
        return data(receiverReq, offset, payload, 0);
    }

    /** An RNDV_DATA frame with frame flags {@code flags} (e.g. {@link RndvHeaders#DATA_FLAG_ATS}). */
    static AmFrame data(long receiverReq, long offset, ByteBuf payload, int flags) {
        return AmFrame.of(AmIds.RNDV_DATA, flags, Unpooled.buffer(16).writeLongLE(receiverReq).writeLongLE(offset),
                payload);
    }

    /** {receiver req, status, size} of an ATP frame, checked to be one; released. */
    static long[] atpFields(AmFrame f) {
        assertTrue(f != null, "no ATP");
        try {
            assertEquals(AmIds.RNDV_ATP, f.amId(), () -> "got " + AmIds.name(f.amId()));
            assertEquals(RndvHeaders.ATP_LENGTH, f.header().readableBytes());
            ByteBuf h = f.header();
            return new long[] {h.getLongLE(0), h.getByte(8), h.getLongLE(9)};
        } finally {
            f.release();
        }
    }

    /**
     * Collects RNDV_DATA frames written for {@code receiverReq} until {@code n} bytes, checking that they come in
     * order from offset 0, each {@code fragment} bytes but the last; returns the bytes.
     */
    byte[] dataFrames(long receiverReq, int n, int fragment) {
        byte[] got = new byte[n];
        int seen = 0;
        while (seen < n) {
            AmFrame f = ch.readOutbound();
            assertTrue(f != null, "only " + seen + " of " + n + " bytes as fragments");
            try {
                assertEquals(AmIds.RNDV_DATA, f.amId());
                assertEquals(RndvHeaders.DATA_LENGTH, f.header().readableBytes());
                assertEquals(receiverReq, f.header().getLongLE(0));
                int offset = (int) f.header().getLongLE(8);
                assertEquals(seen, offset, "fragments in order from offset 0");
                int len = f.payload().readableBytes();
                assertEquals(Math.min(fragment, n - seen), len, "every fragment full but the last");
                f.payload().getBytes(f.payload().readerIndex(), got, offset, len);
                seen += len;
            } finally {
                f.release();
            }
        }
        return got;
    }

    /** The codec's one-line description of its requests. */
    String describe() {
        List<String> out = new ArrayList<>();
        codec.describeRequests(out);
        return out.get(0);
    }
}
