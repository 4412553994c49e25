package io.nucx.wireup;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.nucx.InvalidAddressException;
import io.nucx.WorkerAddress;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.ProtocolException;
import io.nucx.transport.AmFrame;

import java.util.Arrays;

/**
 * Coverage-guided fuzzing (Jazzer) of the wireup layer's decoders of a peer's bytes, read before any endpoint exists:
 * the worker address and every wireup message (the tcp frames under them: {@code TransportFuzzTest}). Each may refuse
 * its input only with the exception it documents ({@link InvalidAddressException}, {@link ProtocolException}); anything else, a hang, an out-of-memory or a leak report (PARANOID) is a finding.
 * In the suite each target runs its seed corpus ({@code PeerBytesFuzzTestInputs/}); {@code bin/fuzz TARGET MINUTES}
 * fuzzes one for real.
 */
class PeerBytesFuzzTest {

    @FuzzTest(maxDuration = "20s")
    void workerAddress(byte[] blob) {
        WorkerAddress a;
        try {
            a = WorkerAddress.decode(blob);
        } catch (InvalidAddressException expected) {
            return;
        }
        byte[] again = a.encode(); // what a decoded address packs to must decode to the same (records hold arrays)
        if (!Arrays.equals(WorkerAddress.decode(again).encode(), again)) {
            throw new AssertionError("an address does not survive encode/decode: " + Arrays.toString(blob));
        }
    }

    /** First byte: the header's length (mod 64); the rest split into header and payload. */
    @FuzzTest(maxDuration = "20s")
    void wireupMessages(byte[] data) {
        if (data.length == 0) {
            return;
        }
        int headerLength = Math.min(data[0] & 63, data.length - 1);
        ByteBuf header = Unpooled.wrappedBuffer(data, 1, headerLength);
        ByteBuf payload = Unpooled.wrappedBuffer(data, 1 + headerLength, data.length - 1 - headerLength);
        AmFrame frame = AmFrame.of(AmIds.WIREUP, 0, header, payload);
        try {
            WireupMessage m = WireupMessage.from(frame);
            AmFrame back = m.toFrame(UnpooledByteBufAllocator.DEFAULT);
            try {
                WireupMessage again = WireupMessage.from(back);
                if (again.type() != m.type() || again.srcEpId() != m.srcEpId() || again.dstEpId() != m.dstEpId()) {
                    throw new AssertionError("a wireup message does not survive toFrame/from: " + m);
                }
            } finally {
                back.release();
            }
        } catch (ProtocolException expected) {
            // refused, naming what is wrong
        } finally {
            frame.release();
        }
    }
}
