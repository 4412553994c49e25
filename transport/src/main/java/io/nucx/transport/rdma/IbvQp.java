package io.nucx.transport.rdma;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * <pre>
 * struct ibv_qp {
 *     struct ibv_context *context;
 *     void               *qp_context;
 *     struct ibv_pd      *pd;
 *     struct ibv_cq      *send_cq;
 *     struct ibv_cq      *recv_cq;
 *     struct ibv_srq     *srq;
 *     uint32_t            handle;
 *     uint32_t            qp_num;
 *     enum ibv_qp_state   state;
 *     enum ibv_qp_type    qp_type;
 *     pthread_mutex_t     mutex;     // 40 bytes
 *     pthread_cond_t      cond;      // 48 bytes
 *     uint32_t            events_completed;
 * };
 * </pre>
 */
final class IbvQp {

    static final StructLayout LAYOUT = MemoryLayout.structLayout(
            ADDRESS.withName("context"),
            ADDRESS.withName("qp_context"),
            ADDRESS.withName("pd"),
            ADDRESS.withName("send_cq"),
            ADDRESS.withName("recv_cq"),
            ADDRESS.withName("srq"),
            JAVA_INT.withName("handle"),
            JAVA_INT.withName("qp_num"),
            JAVA_INT.withName("state"),
            JAVA_INT.withName("qp_type"),
            MemoryLayout.paddingLayout(40 + 48),
            JAVA_INT.withName("events_completed"),
            MemoryLayout.paddingLayout(4));

    static final long CONTEXT = VerbsLayouts.offset(LAYOUT, "context");
    static final long QP_NUM = VerbsLayouts.offset(LAYOUT, "qp_num");
    static final long STATE = VerbsLayouts.offset(LAYOUT, "state");

    /** enum ibv_qp_state */
    static final int IBV_QPS_RESET = 0;
    static final int IBV_QPS_INIT = 1;
    static final int IBV_QPS_RTR = 2;
    static final int IBV_QPS_RTS = 3;
    static final int IBV_QPS_ERR = 6;

    private IbvQp() {
    }

    static int qpNum(MemorySegment qp) {
        return qp.reinterpret(LAYOUT.byteSize()).get(JAVA_INT, QP_NUM);
    }

    static int state(MemorySegment qp) {
        return qp.reinterpret(LAYOUT.byteSize()).get(JAVA_INT, STATE);
    }
}
