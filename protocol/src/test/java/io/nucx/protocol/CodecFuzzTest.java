package io.nucx.protocol;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.util.concurrent.Promise;
import io.nucx.protocol.tag.RndvScheme;
import io.nucx.transport.AmFrame;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ClosedChannelException;
import java.util.List;

/**
 * Coverage-guided fuzzing (Jazzer) of the protocol codecs' inbound side on one endpoint: a sequence of frames of the
 * eager, rendezvous, synchronous, atomic and active-message families, headers and payloads as a peer chooses,
 * through the codecs on an {@link EmbeddedChannel} with a bounded receive budget. A frame may be refused only with
 * {@link ProtocolException} or {@link LimitExceededException}; anything else, a hang, an out-of-memory or a leak
 * report is a finding. Registered memory for atomics is a real native segment.
 *
 * <p>Input: frames of {@code am id index:u8, header length:u8 (mod 64), payload length:u16 (mod 4096), header,
 * payload}, until the input ends.
 */
class CodecFuzzTest {

    private static final int[] IDS = {AmIds.EAGER_ONLY, AmIds.EAGER_FIRST, AmIds.EAGER_MIDDLE, AmIds.EAGER_SYNC_ONLY,
        AmIds.EAGER_SYNC_FIRST, AmIds.EAGER_SYNC_ACK, AmIds.EAGER_ZCOPY_ONLY, AmIds.EAGER_ZCOPY_FIRST,
        AmIds.EAGER_ZCOPY_ACK, AmIds.RNDV_RTS, AmIds.RNDV_ATS, AmIds.RNDV_RTR, AmIds.RNDV_DATA, AmIds.RNDV_ATP,
        AmIds.ATOMIC_REQ, AmIds.ATOMIC_REP, AmIds.AM_ONLY, AmIds.AM_FIRST, AmIds.AM_ZCOPY_ONLY, AmIds.AM_ZCOPY_FIRST,
        AmIds.AM_RTS};

    /** Words peers' atomics may touch: native, alive for the JVM. */
    private static final MemorySegment WORDS = Arena.global().allocate(64, 8);

    @FuzzTest(maxDuration = "20s")
    void inboundFrames(byte[] data) {
        EmbeddedChannel ch = new EmbeddedChannel();
        TestEndpoint ep = new TestEndpoint(ch, TestEndpoint.amLane(256, 8192))
                .receiveBudget(MemoryBudget.worker("NUCX_RX_WORKER_BYTES", 1 << 20).endpoint("NUCX_RX_EP_BYTES",
                        256 << 10));
        ep.toPipeline(t -> (t & 1) == 0);
        WorkerProtocols worker = TestEndpoint.worker(ch, TestEndpoint.settings(1 << 20, RndvScheme.AM,
                ProtocolRegistry.DEFAULT.protocols()));
        // Active messages of even ids have a handler, which asks for rendezvous data; odd ids have none (dropped).
        for (int id = 0; id < 16; id += 2) {
            worker.amHandlers().set(id, (m, endpoint) -> {
                if (m.isRendezvous()) {
                    ByteBuf into = Unpooled.buffer((int) m.dataLength());
                    Promise<Void> done = ch.eventLoop().newPromise();
                    done.addListener(f -> into.release());
                    m.receive(into, done);
                }
            });
        }
        List<ProtocolCodec> codecs = ProtocolRegistry.DEFAULT.initPipeline(ch.pipeline(), ep, worker);
        try {
            worker.memory().register(WORDS);
            ByteBuffer in = ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN);
            while (in.remaining() >= 4 && ch.isOpen()) {
                int id = IDS[(in.get() & 0xff) % IDS.length];
                int h = (in.get() & 0xff) % 64;
                int p = (in.getShort() & 0xffff) % 4096;
                h = Math.min(h, in.remaining());
                byte[] header = new byte[h];
                in.get(header);
                p = Math.min(p, in.remaining());
                byte[] payload = new byte[p];
                in.get(payload);
                try {
                    ch.writeInbound(AmFrame.of(id, 0, Unpooled.wrappedBuffer(header), Unpooled.wrappedBuffer(payload)));
                } catch (ProtocolException | LimitExceededException refused) {
                    break; // the real endpoint closes the lane / fails here
                }
            }
        } finally {
            for (ProtocolCodec c : codecs) {
                c.endpointEnded(new ClosedChannelException());
            }
            worker.matcher().close(new ClosedChannelException());
            ch.finishAndReleaseAll();
        }
        if (ep.receiveBudget().used() != 0) {
            throw new AssertionError("the ended endpoint still holds " + ep.receiveBudget().used() + " bytes");
        }
    }
}
