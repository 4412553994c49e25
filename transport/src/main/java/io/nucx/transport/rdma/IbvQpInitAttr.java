package io.nucx.transport.rdma;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * <pre>
 * struct ibv_qp_init_attr {
 *     void              *qp_context;
 *     struct ibv_cq     *send_cq;
 *     struct ibv_cq     *recv_cq;
 *     struct ibv_srq    *srq;
 *     struct ibv_qp_cap  cap;
 *     enum ibv_qp_type   qp_type;
 *     int                sq_sig_all;
 * };
 * </pre>
 */
final class IbvQpInitAttr {

    static final StructLayout LAYOUT = MemoryLayout.structLayout(
            ADDRESS.withName("qp_context"),
            ADDRESS.withName("send_cq"),
            ADDRESS.withName("recv_cq"),
            ADDRESS.withName("srq"),
            IbvQpCap.LAYOUT.withName("cap"),
            JAVA_INT.withName("qp_type"),
            JAVA_INT.withName("sq_sig_all"),
            MemoryLayout.paddingLayout(4));

    static final long SEND_CQ = VerbsLayouts.offset(LAYOUT, "send_cq");
    static final long RECV_CQ = VerbsLayouts.offset(LAYOUT, "recv_cq");
    static final long MAX_SEND_WR = VerbsLayouts.offset(LAYOUT, "cap", "max_send_wr");
    static final long MAX_RECV_WR = VerbsLayouts.offset(LAYOUT, "cap", "max_recv_wr");
    static final long MAX_SEND_SGE = VerbsLayouts.offset(LAYOUT, "cap", "max_send_sge");
    static final long MAX_RECV_SGE = VerbsLayouts.offset(LAYOUT, "cap", "max_recv_sge");
    static final long MAX_INLINE_DATA = VerbsLayouts.offset(LAYOUT, "cap", "max_inline_data");
    static final long QP_TYPE = VerbsLayouts.offset(LAYOUT, "qp_type");
    static final long SQ_SIG_ALL = VerbsLayouts.offset(LAYOUT, "sq_sig_all");

    /** enum ibv_qp_type */
    static final int IBV_QPT_RC = 2;

    private IbvQpInitAttr() {
    }
}
