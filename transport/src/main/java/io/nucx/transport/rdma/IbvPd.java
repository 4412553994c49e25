package io.nucx.transport.rdma;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * <pre>
 * struct ibv_pd {
 *     struct ibv_context *context;
 *     uint32_t            handle;
 * };
 * </pre>
 */
final class IbvPd {

    static final StructLayout LAYOUT = MemoryLayout.structLayout(
            ADDRESS.withName("context"),
            JAVA_INT.withName("handle"),
            MemoryLayout.paddingLayout(4));

    private IbvPd() {
    }
}
