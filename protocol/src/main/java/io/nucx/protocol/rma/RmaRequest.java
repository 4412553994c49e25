package io.nucx.protocol.rma;

import io.netty.util.concurrent.Promise;
import io.nucx.protocol.amo.RemoteMemoryKey;

import java.lang.foreign.MemorySegment;

/**
 * One operation of the RMA API written to an endpoint ({@link RmaCodec} runs it): a PUT of {@code local} to
 * {@code remoteAddress} of the peer's region {@code key}, a GET from there into {@code local}, a FLUSH (done when
 * everything before it is remotely complete) or a FENCE (what comes after starts once what came before is complete).
 * {@code result} completes with the outcome.
 */
public record RmaRequest(Kind kind, MemorySegment local, RemoteMemoryKey key, long remoteAddress,
                         Promise<Void> result) {

    public enum Kind { PUT, GET, FLUSH, FENCE }

    public static RmaRequest put(MemorySegment from, RemoteMemoryKey key, long remoteAddress, Promise<Void> result) {
        return new RmaRequest(Kind.PUT, from, key, remoteAddress, result);
    }

    public static RmaRequest get(MemorySegment into, RemoteMemoryKey key, long remoteAddress, Promise<Void> result) {
        return new RmaRequest(Kind.GET, into, key, remoteAddress, result);
    }

    public static RmaRequest flush(Promise<Void> result) {
        return new RmaRequest(Kind.FLUSH, null, null, 0, result);
    }

    public static RmaRequest fence(Promise<Void> result) {
        return new RmaRequest(Kind.FENCE, null, null, 0, result);
    }

    @Override
    public String toString() {
        return switch (kind) {
            case PUT, GET -> kind + " of " + local.byteSize() + " bytes at 0x" + Long.toHexString(remoteAddress)
                    + " of " + key;
            default -> kind.name();
        };
    }
}
