package io.nucx.transport.rdma;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * <pre>
 * struct ibv_ah_attr {
 *     struct ibv_global_route grh;
 *     uint16_t dlid;
 *     uint8_t  sl;
 *     uint8_t  src_path_bits;
 *     uint8_t  static_rate;
 *     uint8_t  is_global;
 *     uint8_t  port_num;
 * };
 * </pre>
 */
final class IbvAhAttr {

    static final StructLayout LAYOUT = MemoryLayout.structLayout(
            IbvGlobalRoute.LAYOUT.withName("grh"),
            JAVA_SHORT.withName("dlid"),
            JAVA_BYTE.withName("sl"),
            JAVA_BYTE.withName("src_path_bits"),
            JAVA_BYTE.withName("static_rate"),
            JAVA_BYTE.withName("is_global"),
            JAVA_BYTE.withName("port_num"),
            MemoryLayout.paddingLayout(1));

    private IbvAhAttr() {
    }
}
