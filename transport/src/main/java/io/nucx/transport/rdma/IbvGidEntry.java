package io.nucx.transport.rdma;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * One entry of a port's GID table with its type, from {@code ibv_query_gid_ex} (exported as
 * {@code _ibv_query_gid_ex}, rdma-core 32 and later). On RoCE it tells a v2 GID (routable, UDP) from a v1 one.
 * <pre>
 * struct ibv_gid_entry {
 *     union ibv_gid gid;
 *     uint32_t      gid_index;
 *     uint32_t      port_num;
 *     uint32_t      gid_type;      // enum ibv_gid_type_sysfs: IB 0, RoCE v1 1, RoCE v2 2
 *     uint32_t      ndev_ifindex;
 * };
 * </pre>
 */
final class IbvGidEntry {

    static final StructLayout LAYOUT = MemoryLayout.structLayout(
            IbvGid.LAYOUT.withName("gid"),
            JAVA_INT.withName("gid_index"),
            JAVA_INT.withName("port_num"),
            JAVA_INT.withName("gid_type"),
            JAVA_INT.withName("ndev_ifindex"));

    static final long GID = VerbsLayouts.offset(LAYOUT, "gid");
    static final long GID_TYPE = VerbsLayouts.offset(LAYOUT, "gid_type");

    static final int IBV_GID_TYPE_ROCE_V2 = 2;

    private IbvGidEntry() {
    }
}
