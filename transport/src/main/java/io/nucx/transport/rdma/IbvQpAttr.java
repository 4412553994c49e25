package io.nucx.transport.rdma;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * The attributes of {@code ibv_modify_qp}, and the three transitions of an RC queue pair with the masks they need
 * (man ibv_modify_qp; rdma-core's rc_pingpong; UCX's rc_iface.c).
 * <pre>
 * struct ibv_qp_attr {
 *     enum ibv_qp_state  qp_state, cur_qp_state;
 *     enum ibv_mtu       path_mtu;
 *     enum ibv_mig_state path_mig_state;
 *     uint32_t           qkey, rq_psn, sq_psn, dest_qp_num;
 *     unsigned int       qp_access_flags;
 *     struct ibv_qp_cap  cap;
 *     struct ibv_ah_attr ah_attr, alt_ah_attr;
 *     uint16_t           pkey_index, alt_pkey_index;
 *     uint8_t            en_sqd_async_notify, sq_draining, max_rd_atomic, max_dest_rd_atomic, min_rnr_timer,
 *                        port_num, timeout, retry_cnt, rnr_retry, alt_port_num, alt_timeout;
 *     uint32_t           rate_limit;
 * };
 * </pre>
 */
final class IbvQpAttr {

    static final StructLayout LAYOUT = MemoryLayout.structLayout(
            JAVA_INT.withName("qp_state"),
            JAVA_INT.withName("cur_qp_state"),
            JAVA_INT.withName("path_mtu"),
            JAVA_INT.withName("path_mig_state"),
            JAVA_INT.withName("qkey"),
            JAVA_INT.withName("rq_psn"),
            JAVA_INT.withName("sq_psn"),
            JAVA_INT.withName("dest_qp_num"),
            JAVA_INT.withName("qp_access_flags"),
            IbvQpCap.LAYOUT.withName("cap"),
            IbvAhAttr.LAYOUT.withName("ah_attr"),
            IbvAhAttr.LAYOUT.withName("alt_ah_attr"),
            JAVA_SHORT.withName("pkey_index"),
            JAVA_SHORT.withName("alt_pkey_index"),
            JAVA_BYTE.withName("en_sqd_async_notify"),
            JAVA_BYTE.withName("sq_draining"),
            JAVA_BYTE.withName("max_rd_atomic"),
            JAVA_BYTE.withName("max_dest_rd_atomic"),
            JAVA_BYTE.withName("min_rnr_timer"),
            JAVA_BYTE.withName("port_num"),
            JAVA_BYTE.withName("timeout"),
            JAVA_BYTE.withName("retry_cnt"),
            JAVA_BYTE.withName("rnr_retry"),
            JAVA_BYTE.withName("alt_port_num"),
            JAVA_BYTE.withName("alt_timeout"),
            MemoryLayout.paddingLayout(1),
            JAVA_INT.withName("rate_limit"),
            MemoryLayout.paddingLayout(4));

    static final long QP_STATE = VerbsLayouts.offset(LAYOUT, "qp_state");
    static final long PATH_MTU = VerbsLayouts.offset(LAYOUT, "path_mtu");
    static final long RQ_PSN = VerbsLayouts.offset(LAYOUT, "rq_psn");
    static final long SQ_PSN = VerbsLayouts.offset(LAYOUT, "sq_psn");
    static final long DEST_QP_NUM = VerbsLayouts.offset(LAYOUT, "dest_qp_num");
    static final long QP_ACCESS_FLAGS = VerbsLayouts.offset(LAYOUT, "qp_access_flags");
    static final long AH_DGID = VerbsLayouts.offset(LAYOUT, "ah_attr", "grh", "dgid");
    static final long AH_SGID_INDEX = VerbsLayouts.offset(LAYOUT, "ah_attr", "grh", "sgid_index");
    static final long AH_HOP_LIMIT = VerbsLayouts.offset(LAYOUT, "ah_attr", "grh", "hop_limit");
    static final long AH_DLID = VerbsLayouts.offset(LAYOUT, "ah_attr", "dlid");
    static final long AH_SL = VerbsLayouts.offset(LAYOUT, "ah_attr", "sl");
    static final long AH_IS_GLOBAL = VerbsLayouts.offset(LAYOUT, "ah_attr", "is_global");
    static final long AH_PORT_NUM = VerbsLayouts.offset(LAYOUT, "ah_attr", "port_num");
    static final long PKEY_INDEX = VerbsLayouts.offset(LAYOUT, "pkey_index");
    static final long MAX_RD_ATOMIC = VerbsLayouts.offset(LAYOUT, "max_rd_atomic");
    static final long MAX_DEST_RD_ATOMIC = VerbsLayouts.offset(LAYOUT, "max_dest_rd_atomic");
    static final long MIN_RNR_TIMER = VerbsLayouts.offset(LAYOUT, "min_rnr_timer");
    static final long PORT_NUM = VerbsLayouts.offset(LAYOUT, "port_num");
    static final long TIMEOUT = VerbsLayouts.offset(LAYOUT, "timeout");
    static final long RETRY_CNT = VerbsLayouts.offset(LAYOUT, "retry_cnt");
    static final long RNR_RETRY = VerbsLayouts.offset(LAYOUT, "rnr_retry");

    /** enum ibv_qp_attr_mask */
    static final int IBV_QP_STATE = 1;
    static final int IBV_QP_ACCESS_FLAGS = 1 << 3;
    static final int IBV_QP_PKEY_INDEX = 1 << 4;
    static final int IBV_QP_PORT = 1 << 5;
    static final int IBV_QP_AV = 1 << 7;
    static final int IBV_QP_PATH_MTU = 1 << 8;
    static final int IBV_QP_TIMEOUT = 1 << 9;
    static final int IBV_QP_RETRY_CNT = 1 << 10;
    static final int IBV_QP_RNR_RETRY = 1 << 11;
    static final int IBV_QP_RQ_PSN = 1 << 12;
    static final int IBV_QP_MAX_QP_RD_ATOMIC = 1 << 13;
    static final int IBV_QP_MIN_RNR_TIMER = 1 << 15;
    static final int IBV_QP_SQ_PSN = 1 << 16;
    static final int IBV_QP_MAX_DEST_RD_ATOMIC = 1 << 17;
    static final int IBV_QP_DEST_QPN = 1 << 20;

    /** RESET -> INIT: 0x39. */
    static final int MASK_INIT = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
    /** INIT -> RTR: 0x129181. */
    static final int MASK_RTR = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN
            | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    /** RTR -> RTS: 0x12e01. */
    static final int MASK_RTS = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN
            | IBV_QP_MAX_QP_RD_ATOMIC;

    private IbvQpAttr() {
    }

    static void setByte(MemorySegment a, long offset, int value) {
        a.set(JAVA_BYTE, offset, (byte) value);
    }
}
