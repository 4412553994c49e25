package io.nucx.transport.rdma;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * A receive work request, a flyweight like {@link IbvSendWr}.
 * <pre>
 * struct ibv_recv_wr {
 *     uint64_t            wr_id;
 *     struct ibv_recv_wr *next;
 *     struct ibv_sge     *sg_list;
 *     int                 num_sge;
 * };
 * </pre>
 */
final class IbvRecvWr {

    static final StructLayout LAYOUT = MemoryLayout.structLayout(
            JAVA_LONG.withName("wr_id"),
            ADDRESS.withName("next"),
            ADDRESS.withName("sg_list"),
            JAVA_INT.withName("num_sge"),
            MemoryLayout.paddingLayout(4));

    static final long WR_ID = VerbsLayouts.offset(LAYOUT, "wr_id");
    static final long NEXT = VerbsLayouts.offset(LAYOUT, "next");
    static final long SG_LIST = VerbsLayouts.offset(LAYOUT, "sg_list");
    static final long NUM_SGE = VerbsLayouts.offset(LAYOUT, "num_sge");

    private IbvRecvWr() {
    }

    static void set(MemorySegment wr, long wrId, MemorySegment sge) {
        wr.set(JAVA_LONG, WR_ID, wrId);
        wr.set(ADDRESS, NEXT, MemorySegment.NULL);
        wr.set(ADDRESS, SG_LIST, sge);
        wr.set(JAVA_INT, NUM_SGE, 1);
    }
}
