package io.nucx.transport.rdma;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * <pre>
 * struct ibv_device_attr {
 *     char     fw_ver[64];
 *     __be64   node_guid;
 *     __be64   sys_image_guid;
 *     uint64_t max_mr_size;
 *     uint64_t page_size_cap;
 *     uint32_t vendor_id, vendor_part_id, hw_ver;
 *     int      max_qp, max_qp_wr;
 *     unsigned int device_cap_flags;
 *     int      max_sge, max_sge_rd, max_cq, max_cqe, max_mr, max_pd, max_qp_rd_atom, max_ee_rd_atom,
 *              max_res_rd_atom, max_qp_init_rd_atom, max_ee_init_rd_atom;
 *     enum ibv_atomic_cap atomic_cap;
 *     int      max_ee, max_rdd, max_mw, max_raw_ipv6_qp, max_raw_ethy_qp, max_mcast_grp, max_mcast_qp_attach,
 *              max_total_mcast_qp_attach, max_ah, max_fmr, max_map_per_fmr, max_srq, max_srq_wr, max_srq_sge;
 *     uint16_t max_pkeys;
 *     uint8_t  local_ca_ack_delay;
 *     uint8_t  phys_port_cnt;
 * };
 * </pre>
 */
final class IbvDeviceAttr {

    static final StructLayout LAYOUT = MemoryLayout.structLayout(
            MemoryLayout.sequenceLayout(64, JAVA_BYTE).withName("fw_ver"),
            JAVA_LONG.withName("node_guid"),
            JAVA_LONG.withName("sys_image_guid"),
            JAVA_LONG.withName("max_mr_size"),
            JAVA_LONG.withName("page_size_cap"),
            JAVA_INT.withName("vendor_id"),
            JAVA_INT.withName("vendor_part_id"),
            JAVA_INT.withName("hw_ver"),
            JAVA_INT.withName("max_qp"),
            JAVA_INT.withName("max_qp_wr"),
            JAVA_INT.withName("device_cap_flags"),
            JAVA_INT.withName("max_sge"),
            JAVA_INT.withName("max_sge_rd"),
            JAVA_INT.withName("max_cq"),
            JAVA_INT.withName("max_cqe"),
            JAVA_INT.withName("max_mr"),
            JAVA_INT.withName("max_pd"),
            JAVA_INT.withName("max_qp_rd_atom"),
            JAVA_INT.withName("max_ee_rd_atom"),
            JAVA_INT.withName("max_res_rd_atom"),
            JAVA_INT.withName("max_qp_init_rd_atom"),
            JAVA_INT.withName("max_ee_init_rd_atom"),
            JAVA_INT.withName("atomic_cap"),
            JAVA_INT.withName("max_ee"),
            JAVA_INT.withName("max_rdd"),
            JAVA_INT.withName("max_mw"),
            JAVA_INT.withName("max_raw_ipv6_qp"),
            JAVA_INT.withName("max_raw_ethy_qp"),
            JAVA_INT.withName("max_mcast_grp"),
            JAVA_INT.withName("max_mcast_qp_attach"),
            JAVA_INT.withName("max_total_mcast_qp_attach"),
            JAVA_INT.withName("max_ah"),
            JAVA_INT.withName("max_fmr"),
            JAVA_INT.withName("max_map_per_fmr"),
            JAVA_INT.withName("max_srq"),
            JAVA_INT.withName("max_srq_wr"),
            JAVA_INT.withName("max_srq_sge"),
            JAVA_SHORT.withName("max_pkeys"),
            JAVA_BYTE.withName("local_ca_ack_delay"),
            JAVA_BYTE.withName("phys_port_cnt"),
            MemoryLayout.paddingLayout(4));

    static final long FW_VER = VerbsLayouts.offset(LAYOUT, "fw_ver");
    static final long MAX_MR_SIZE = VerbsLayouts.offset(LAYOUT, "max_mr_size");
    static final long MAX_QP_WR = VerbsLayouts.offset(LAYOUT, "max_qp_wr");
    static final long MAX_SGE = VerbsLayouts.offset(LAYOUT, "max_sge");
    static final long MAX_CQE = VerbsLayouts.offset(LAYOUT, "max_cqe");
    static final long MAX_QP_RD_ATOM = VerbsLayouts.offset(LAYOUT, "max_qp_rd_atom");
    static final long MAX_QP_INIT_RD_ATOM = VerbsLayouts.offset(LAYOUT, "max_qp_init_rd_atom");
    static final long ATOMIC_CAP = VerbsLayouts.offset(LAYOUT, "atomic_cap");
    static final long PHYS_PORT_CNT = VerbsLayouts.offset(LAYOUT, "phys_port_cnt");

    /** enum ibv_atomic_cap */
    static final int IBV_ATOMIC_NONE = 0;

    private IbvDeviceAttr() {
    }

    static String fwVer(MemorySegment a) {
        return VerbsLayouts.cString(a, FW_VER, 64);
    }
}
