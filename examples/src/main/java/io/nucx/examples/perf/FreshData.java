package io.nucx.examples.perf;

import io.netty.buffer.ByteBuf;

/**
 * perftest's {@code --fresh-data}: a side writes its send buffer before each send, one byte in every 64-byte cache
 * line, so every line of it is new in the writer's cache, as an application's serialized message or updated tensor
 * is. ucx_perftest, and perftest without it, send one buffer that never changes: a reader of the peer's memory (cma's
 * process_vm_readv) then reads lines its own core still holds from the last message, which flatters every
 * protocol that reads where the data were written (BENCHMARKS.md, "Fresh data").
 */
final class FreshData {

    private static final int LINE = 64;

    private byte generation;

    /** Writes one byte in each cache line of {@code buf}'s {@code [from, from + length)}. */
    void write(ByteBuf buf, int from, int length) {
        byte g = ++generation;
        for (int i = 0; i < length; i += LINE) {
            buf.setByte(from + i, g);
        }
    }
}
