package io.nucx.transport.rdma;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * nucx reads only {@code context} (to find the provider's {@code poll_cq}/{@code req_notify_cq}).
 * <pre>
 * struct ibv_cq {
 *     struct ibv_context      *context;
 *     struct ibv_comp_channel *channel;
 *     void                    *cq_context;
 *     uint32_t                 handle;
 *     int                      cqe;
 *     pthread_mutex_t          mutex;     // 40 bytes
 *     pthread_cond_t           cond;      // 48 bytes
 *     uint32_t                 comp_events_completed;
 *     uint32_t                 async_events_completed;
 * };
 * </pre>
 */
final class IbvCq {

    static final StructLayout LAYOUT = MemoryLayout.structLayout(
            ADDRESS.withName("context"),
            ADDRESS.withName("channel"),
            ADDRESS.withName("cq_context"),
            JAVA_INT.withName("handle"),
            JAVA_INT.withName("cqe"),
            MemoryLayout.paddingLayout(40 + 48),
            JAVA_INT.withName("comp_events_completed"),
            JAVA_INT.withName("async_events_completed"));

    static final long CONTEXT = VerbsLayouts.offset(LAYOUT, "context");

    private IbvCq() {
    }
}
