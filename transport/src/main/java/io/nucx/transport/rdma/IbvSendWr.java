package io.nucx.transport.rdma;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * A send work request, used as a flyweight: one preallocated {@code ibv_send_wr} (and its SGE) per queue pair,
 * filled in place before each {@code post_send}. The provider copies the request into its queue during the call,
 * so the memory is free again when the call returns.
 * <pre>
 * struct ibv_send_wr {
 *     uint64_t            wr_id;
 *     struct ibv_send_wr *next;
 *     struct ibv_sge     *sg_list;
 *     int                 num_sge;
 *     enum ibv_wr_opcode  opcode;
 *     unsigned int        send_flags;
 *     union { __be32 imm_data; uint32_t invalidate_rkey; };
 *     union {
 *         struct { uint64_t remote_addr; uint32_t rkey; } rdma;
 *         struct { uint64_t remote_addr; uint64_t compare_add; uint64_t swap; uint32_t rkey; } atomic;
 *         struct { struct ibv_ah *ah; uint32_t remote_qpn; uint32_t remote_qkey; } ud;
 *     } wr;
 *     union { struct { uint32_t remote_srqn; } xrc; } qp_type;
 *     union { struct { ... } bind_mw; struct { ... } tso; };   // 48 bytes, unused
 * };
 * </pre>
 */
final class IbvSendWr {

    static final StructLayout RDMA = MemoryLayout.structLayout(
            JAVA_LONG.withName("remote_addr"),
            JAVA_INT.withName("rkey"),
            MemoryLayout.paddingLayout(4));
    static final StructLayout ATOMIC = MemoryLayout.structLayout(
            JAVA_LONG.withName("remote_addr"),
            JAVA_LONG.withName("compare_add"),
            JAVA_LONG.withName("swap"),
            JAVA_INT.withName("rkey"),
            MemoryLayout.paddingLayout(4));

    static final StructLayout LAYOUT = MemoryLayout.structLayout(
            JAVA_LONG.withName("wr_id"),
            ADDRESS.withName("next"),
            ADDRESS.withName("sg_list"),
            JAVA_INT.withName("num_sge"),
            JAVA_INT.withName("opcode"),
            JAVA_INT.withName("send_flags"),
            MemoryLayout.unionLayout(
                    JAVA_INT.withName("imm_data"),
                    JAVA_INT.withName("invalidate_rkey")),
            MemoryLayout.unionLayout(
                    RDMA.withName("rdma"),
                    ATOMIC.withName("atomic")).withName("wr"),
            MemoryLayout.unionLayout(
                    MemoryLayout.structLayout(JAVA_INT.withName("remote_srqn")).withName("xrc")).withName("qp_type"),
            MemoryLayout.paddingLayout(4 + 48));

    static final long WR_ID = VerbsLayouts.offset(LAYOUT, "wr_id");
    static final long NEXT = VerbsLayouts.offset(LAYOUT, "next");
    static final long SG_LIST = VerbsLayouts.offset(LAYOUT, "sg_list");
    static final long NUM_SGE = VerbsLayouts.offset(LAYOUT, "num_sge");
    static final long OPCODE = VerbsLayouts.offset(LAYOUT, "opcode");
    static final long SEND_FLAGS = VerbsLayouts.offset(LAYOUT, "send_flags");
    static final long RDMA_REMOTE_ADDR = VerbsLayouts.offset(LAYOUT, "wr", "rdma", "remote_addr");
    static final long RDMA_RKEY = VerbsLayouts.offset(LAYOUT, "wr", "rdma", "rkey");
    static final long ATOMIC_REMOTE_ADDR = VerbsLayouts.offset(LAYOUT, "wr", "atomic", "remote_addr");
    static final long ATOMIC_COMPARE_ADD = VerbsLayouts.offset(LAYOUT, "wr", "atomic", "compare_add");
    static final long ATOMIC_SWAP = VerbsLayouts.offset(LAYOUT, "wr", "atomic", "swap");
    static final long ATOMIC_RKEY = VerbsLayouts.offset(LAYOUT, "wr", "atomic", "rkey");

    /** enum ibv_wr_opcode */
    static final int IBV_WR_RDMA_WRITE = 0;
    static final int IBV_WR_SEND = 2;
    static final int IBV_WR_RDMA_READ = 4;
    static final int IBV_WR_ATOMIC_CMP_AND_SWP = 5;
    static final int IBV_WR_ATOMIC_FETCH_AND_ADD = 6;
    /** enum ibv_send_flags */
    static final int IBV_SEND_FENCE = 1;
    static final int IBV_SEND_SIGNALED = 2;
    static final int IBV_SEND_INLINE = 8;

    private IbvSendWr() {
    }

    /** Fills the common part of a one-SGE request; {@code next} is always NULL (one request per call). */
    static void set(MemorySegment wr, long wrId, MemorySegment sge, int opcode, int flags) {
        wr.set(JAVA_LONG, WR_ID, wrId);
        wr.set(ADDRESS, NEXT, MemorySegment.NULL);
        wr.set(ADDRESS, SG_LIST, sge);
        wr.set(JAVA_INT, NUM_SGE, 1);
        wr.set(JAVA_INT, OPCODE, opcode);
        wr.set(JAVA_INT, SEND_FLAGS, flags);
    }

    static void rdma(MemorySegment wr, long remoteAddr, int rkey) {
        wr.set(JAVA_LONG, RDMA_REMOTE_ADDR, remoteAddr);
        wr.set(JAVA_INT, RDMA_RKEY, rkey);
    }

    static void atomic(MemorySegment wr, long remoteAddr, int rkey, long compareAdd, long swap) {
        wr.set(JAVA_LONG, ATOMIC_REMOTE_ADDR, remoteAddr);
        wr.set(JAVA_INT, ATOMIC_RKEY, rkey);
        wr.set(JAVA_LONG, ATOMIC_COMPARE_ADD, compareAdd);
        wr.set(JAVA_LONG, ATOMIC_SWAP, swap);
    }
}
