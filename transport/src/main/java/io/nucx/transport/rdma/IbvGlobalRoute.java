package io.nucx.transport.rdma;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * <pre>
 * struct ibv_global_route {
 *     union ibv_gid dgid;
 *     uint32_t      flow_label;
 *     uint8_t       sgid_index;
 *     uint8_t       hop_limit;
 *     uint8_t       traffic_class;
 * };
 * </pre>
 */
final class IbvGlobalRoute {

    static final StructLayout LAYOUT = MemoryLayout.structLayout(
            IbvGid.LAYOUT.withName("dgid"),
            JAVA_INT.withName("flow_label"),
            JAVA_BYTE.withName("sgid_index"),
            JAVA_BYTE.withName("hop_limit"),
            JAVA_BYTE.withName("traffic_class"),
            MemoryLayout.paddingLayout(1));

    private IbvGlobalRoute() {
    }
}
