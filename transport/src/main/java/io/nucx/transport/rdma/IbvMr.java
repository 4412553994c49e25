package io.nucx.transport.rdma;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * <pre>
 * struct ibv_mr {
 *     struct ibv_context *context;
 *     struct ibv_pd      *pd;
 *     void               *addr;
 *     size_t              length;
 *     uint32_t            handle;
 *     uint32_t            lkey;
 *     uint32_t            rkey;
 * };
 * </pre>
 */
final class IbvMr {

    static final StructLayout LAYOUT = MemoryLayout.structLayout(
            ADDRESS.withName("context"),
            ADDRESS.withName("pd"),
            ADDRESS.withName("addr"),
            JAVA_LONG.withName("length"),
            JAVA_INT.withName("handle"),
            JAVA_INT.withName("lkey"),
            JAVA_INT.withName("rkey"),
            MemoryLayout.paddingLayout(4));

    static final long LKEY = VerbsLayouts.offset(LAYOUT, "lkey");
    static final long RKEY = VerbsLayouts.offset(LAYOUT, "rkey");

    /** enum ibv_access_flags */
    static final int IBV_ACCESS_LOCAL_WRITE = 1;
    static final int IBV_ACCESS_REMOTE_WRITE = 2;
    static final int IBV_ACCESS_REMOTE_READ = 4;
    static final int IBV_ACCESS_REMOTE_ATOMIC = 8;

    private IbvMr() {
    }

    static int lkey(MemorySegment mr) {
        return mr.reinterpret(LAYOUT.byteSize()).get(JAVA_INT, LKEY);
    }

    static int rkey(MemorySegment mr) {
        return mr.reinterpret(LAYOUT.byteSize()).get(JAVA_INT, RKEY);
    }
}
