package io.nucx.transport.rdma;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * <pre>
 * struct ibv_comp_channel {
 *     struct ibv_context *context;
 *     int                 fd;
 *     int                 refcnt;
 * };
 * </pre>
 */
final class IbvCompChannel {

    static final StructLayout LAYOUT = MemoryLayout.structLayout(
            ADDRESS.withName("context"),
            JAVA_INT.withName("fd"),
            JAVA_INT.withName("refcnt"));

    static final long FD = VerbsLayouts.offset(LAYOUT, "fd");

    private IbvCompChannel() {
    }

    static int fd(MemorySegment channel) {
        return channel.reinterpret(LAYOUT.byteSize()).get(JAVA_INT, FD);
    }
}
