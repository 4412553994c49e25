package io.nucx.transport.rdma;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * <pre>
 * struct ibv_qp_cap {
 *     uint32_t max_send_wr;
 *     uint32_t max_recv_wr;
 *     uint32_t max_send_sge;
 *     uint32_t max_recv_sge;
 *     uint32_t max_inline_data;
 * };
 * </pre>
 */
final class IbvQpCap {

    static final StructLayout LAYOUT = MemoryLayout.structLayout(
            JAVA_INT.withName("max_send_wr"),
            JAVA_INT.withName("max_recv_wr"),
            JAVA_INT.withName("max_send_sge"),
            JAVA_INT.withName("max_recv_sge"),
            JAVA_INT.withName("max_inline_data"));

    private IbvQpCap() {
    }
}
