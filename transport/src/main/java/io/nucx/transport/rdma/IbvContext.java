package io.nucx.transport.rdma;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * The device context, and in it the provider's operations table through which the data-path verbs dispatch
 * ({@code ibv_post_send} and friends are {@code static inline} in verbs.h: {@code qp->context->ops.post_send(...)}).
 * <pre>
 * struct ibv_context_ops {                       // 32 pointers; the slots nucx calls:
 *     ...
 *     int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);          // slot 11
 *     int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);                    // slot 12
 *     ...
 *     int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);  // slot 25
 *     int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);  // slot 26
 *     ...
 * };
 * struct ibv_context {
 *     struct ibv_device      *device;
 *     struct ibv_context_ops  ops;
 *     int                     cmd_fd;
 *     int                     async_fd;
 *     int                     num_comp_vectors;
 *     pthread_mutex_t         mutex;
 *     void                   *abi_compat;
 * };
 * </pre>
 */
final class IbvContext {

    static final StructLayout OPS = MemoryLayout.structLayout(
            MemoryLayout.paddingLayout(11 * 8),
            ADDRESS.withName("poll_cq"),
            ADDRESS.withName("req_notify_cq"),
            MemoryLayout.paddingLayout(12 * 8),
            ADDRESS.withName("post_send"),
            ADDRESS.withName("post_recv"),
            MemoryLayout.paddingLayout(5 * 8));

    static final StructLayout LAYOUT = MemoryLayout.structLayout(
            ADDRESS.withName("device"),
            OPS.withName("ops"),
            JAVA_INT.withName("cmd_fd"),
            JAVA_INT.withName("async_fd"),
            JAVA_INT.withName("num_comp_vectors"),
            MemoryLayout.paddingLayout(4 + 40),
            ADDRESS.withName("abi_compat"));

    static final long POLL_CQ = VerbsLayouts.offset(LAYOUT, "ops", "poll_cq");
    static final long REQ_NOTIFY_CQ = VerbsLayouts.offset(LAYOUT, "ops", "req_notify_cq");
    static final long POST_SEND = VerbsLayouts.offset(LAYOUT, "ops", "post_send");
    static final long POST_RECV = VerbsLayouts.offset(LAYOUT, "ops", "post_recv");
    static final long ASYNC_FD = VerbsLayouts.offset(LAYOUT, "async_fd");

    private IbvContext() {
    }

    static MemorySegment of(MemorySegment ctx) {
        return ctx.reinterpret(LAYOUT.byteSize());
    }

    /** The provider function in one slot of {@code ops}; read once per object (the table never changes). */
    static MemorySegment op(MemorySegment ctx, long slot) {
        MemorySegment fn = of(ctx).get(ADDRESS, slot);
        if (fn.equals(MemorySegment.NULL)) {
            throw new IllegalStateException("the verbs provider has no function at ops offset " + slot);
        }
        return fn;
    }

    static int asyncFd(MemorySegment ctx) {
        return of(ctx).get(JAVA_INT, ASYNC_FD);
    }
}
