package io.nucx.transport.rdma;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * A work completion; {@code poll_cq} fills an array of them, which nucx reads in place with static accessors.
 * <pre>
 * struct ibv_wc {
 *     uint64_t             wr_id;
 *     enum ibv_wc_status   status;
 *     enum ibv_wc_opcode   opcode;
 *     uint32_t             vendor_err;
 *     uint32_t             byte_len;
 *     union { __be32 imm_data; uint32_t invalidated_rkey; };
 *     uint32_t             qp_num;
 *     uint32_t             src_qp;
 *     unsigned int         wc_flags;
 *     uint16_t             pkey_index;
 *     uint16_t             slid;
 *     uint8_t              sl;
 *     uint8_t              dlid_path_bits;
 * };
 * </pre>
 */
final class IbvWc {

    static final StructLayout LAYOUT = MemoryLayout.structLayout(
            JAVA_LONG.withName("wr_id"),
            JAVA_INT.withName("status"),
            JAVA_INT.withName("opcode"),
            JAVA_INT.withName("vendor_err"),
            JAVA_INT.withName("byte_len"),
            MemoryLayout.unionLayout(
                    JAVA_INT.withName("imm_data"),
                    JAVA_INT.withName("invalidated_rkey")),
            JAVA_INT.withName("qp_num"),
            JAVA_INT.withName("src_qp"),
            JAVA_INT.withName("wc_flags"),
            JAVA_SHORT.withName("pkey_index"),
            JAVA_SHORT.withName("slid"),
            JAVA_BYTE.withName("sl"),
            JAVA_BYTE.withName("dlid_path_bits"),
            MemoryLayout.paddingLayout(2));

    static final long SIZE = LAYOUT.byteSize();
    static final long WR_ID = VerbsLayouts.offset(LAYOUT, "wr_id");
    static final long STATUS = VerbsLayouts.offset(LAYOUT, "status");
    static final long OPCODE = VerbsLayouts.offset(LAYOUT, "opcode");
    static final long VENDOR_ERR = VerbsLayouts.offset(LAYOUT, "vendor_err");
    static final long BYTE_LEN = VerbsLayouts.offset(LAYOUT, "byte_len");

    /** enum ibv_wc_status (those nucx names; others print their number) */
    static final int IBV_WC_SUCCESS = 0;
    static final int IBV_WC_WR_FLUSH_ERR = 5;
    /** enum ibv_wc_opcode: receives have bit 7 set */
    static final int IBV_WC_RECV = 128;

    private IbvWc() {
    }

    static long wrId(MemorySegment wcs, int i) {
        return wcs.get(JAVA_LONG, i * SIZE + WR_ID);
    }

    static int status(MemorySegment wcs, int i) {
        return wcs.get(JAVA_INT, i * SIZE + STATUS);
    }

    static int opcode(MemorySegment wcs, int i) {
        return wcs.get(JAVA_INT, i * SIZE + OPCODE);
    }

    static int vendorErr(MemorySegment wcs, int i) {
        return wcs.get(JAVA_INT, i * SIZE + VENDOR_ERR);
    }

    static int byteLen(MemorySegment wcs, int i) {
        return wcs.get(JAVA_INT, i * SIZE + BYTE_LEN);
    }

    /** ibv_wc_status_str's words, so a message reads the same without a downcall. */
    static String statusName(int status) {
        return switch (status) {
            case 0 -> "IBV_WC_SUCCESS";
            case 1 -> "IBV_WC_LOC_LEN_ERR (local length error)";
            case 2 -> "IBV_WC_LOC_QP_OP_ERR (local QP operation error)";
            case 4 -> "IBV_WC_LOC_PROT_ERR (local protection error)";
            case 5 -> "IBV_WC_WR_FLUSH_ERR (work request flushed: the queue pair is in the error state)";
            case 8 -> "IBV_WC_LOC_ACCESS_ERR (local access error)";
            case 9 -> "IBV_WC_REM_INV_REQ_ERR (remote invalid request)";
            case 10 -> "IBV_WC_REM_ACCESS_ERR (remote access error: key, range or access rights)";
            case 11 -> "IBV_WC_REM_OP_ERR (remote operation error)";
            case 12 -> "IBV_WC_RETRY_EXC_ERR (transport retry counter exceeded: the peer does not answer)";
            case 13 -> "IBV_WC_RNR_RETRY_EXC_ERR (receiver not ready retry counter exceeded)";
            default -> "ibv_wc_status " + status;
        };
    }
}
