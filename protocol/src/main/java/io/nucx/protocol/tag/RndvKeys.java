package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.nucx.protocol.ProtocolException;
import io.nucx.transport.rma.InvalidRemoteKeyException;
import io.nucx.transport.rma.RemoteKey;
import io.nucx.transport.rma.RmaLane;

import java.lang.foreign.MemorySegment;

/** The rendezvous protocols' side of remote keys: what memory can be exposed, and checking a key that arrived. */
final class RndvKeys {

    private RndvKeys() {
    }

    /**
     * Bytes {@code [index, index + length)} of {@code buf} as one run of native memory, or null when they are not
     * (heap memory, which the GC moves; a composite of several runs; nothing at all).
     */
    static MemorySegment nativeRun(ByteBuf buf, int index, int length) {
        if (length == 0 || !buf.isDirect() || buf.nioBufferCount() != 1) {
            return null;
        }
        return MemorySegment.ofBuffer(buf.nioBuffer(index, length));
    }

    /**
     * The key the peer packed for a {@code size}-byte message, unpacked by {@code lane}.
     *
     * @param what names the frame, for the error
     * @throws ProtocolException when the lane refuses the key (saying why) or it does not cover exactly {@code size}
     */
    static RemoteKey unpack(RmaLane lane, ByteBuf packed, long size, String what) {
        RemoteKey key;
        try {
            key = lane.unpackKey(packed);
        } catch (InvalidRemoteKeyException e) {
            throw new ProtocolException(what + ": remote key is invalid: " + e.getMessage());
        }
        if (key.length() != size) {
            throw new ProtocolException(what + ": remote key covers " + key.length() + " bytes of a " + size
                    + "-byte message");
        }
        return key;
    }
}
