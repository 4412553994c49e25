package io.nucx.protocol.amo;

import io.netty.util.concurrent.Promise;

/**
 * An atomic on a peer's registered memory, written to an endpoint; {@link AmoCodec} turns it into ATOMIC_REQ.
 * {@code result} gets the word's previous value when the peer has applied it.
 *
 * @param compare for {@link AtomicOp#CSWAP} the expected value, else ignored
 */
public record AtomicRequest(AtomicOp op, RemoteMemoryKey key, long address, long value, long compare,
                            Promise<Long> result) {
}
