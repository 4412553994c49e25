package io.nucx.transport.rdma;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * <pre>
 * struct ibv_async_event {
 *     union {
 *         struct ibv_cq  *cq;
 *         struct ibv_qp  *qp;
 *         struct ibv_srq *srq;
 *         struct ibv_wq  *wq;
 *         int             port_num;
 *     } element;
 *     enum ibv_event_type event_type;
 * };
 * </pre>
 */
final class IbvAsyncEvent {

    static final StructLayout LAYOUT = MemoryLayout.structLayout(
            MemoryLayout.unionLayout(
                    ADDRESS.withName("cq"),
                    ADDRESS.withName("qp"),
                    ADDRESS.withName("srq"),
                    ADDRESS.withName("wq"),
                    JAVA_INT.withName("port_num")).withName("element"),
            JAVA_INT.withName("event_type"),
            MemoryLayout.paddingLayout(4));

    static final long ELEMENT = VerbsLayouts.offset(LAYOUT, "element");
    static final long EVENT_TYPE = VerbsLayouts.offset(LAYOUT, "event_type");

    /** enum ibv_event_type (those that concern a QP or CQ of nucx) */
    static final int IBV_EVENT_CQ_ERR = 0;
    static final int IBV_EVENT_QP_FATAL = 1;
    static final int IBV_EVENT_QP_REQ_ERR = 2;
    static final int IBV_EVENT_QP_ACCESS_ERR = 3;
    static final int IBV_EVENT_COMM_EST = 4;

    private IbvAsyncEvent() {
    }

    static String name(int type) {
        return switch (type) {
            case 0 -> "IBV_EVENT_CQ_ERR";
            case 1 -> "IBV_EVENT_QP_FATAL";
            case 2 -> "IBV_EVENT_QP_REQ_ERR";
            case 3 -> "IBV_EVENT_QP_ACCESS_ERR";
            case 4 -> "IBV_EVENT_COMM_EST";
            case 5 -> "IBV_EVENT_SQ_DRAINED";
            case 9 -> "IBV_EVENT_PORT_ACTIVE";
            case 10 -> "IBV_EVENT_PORT_ERR";
            case 8 -> "IBV_EVENT_DEVICE_FATAL";
            default -> "ibv_event_type " + type;
        };
    }
}
