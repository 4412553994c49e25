package io.nucx.transport.rdma;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * Filled by the exported {@code ibv_query_port}, which writes the compat struct (everything but
 * {@code port_cap_flags2}); nucx allocates the full 52 bytes, zeroed.
 * <pre>
 * struct ibv_port_attr {
 *     enum ibv_port_state state;
 *     enum ibv_mtu        max_mtu;
 *     enum ibv_mtu        active_mtu;
 *     int                 gid_tbl_len;
 *     uint32_t            port_cap_flags;
 *     uint32_t            max_msg_sz;
 *     uint32_t            bad_pkey_cntr;
 *     uint32_t            qkey_viol_cntr;
 *     uint16_t            pkey_tbl_len;
 *     uint16_t            lid;
 *     uint16_t            sm_lid;
 *     uint8_t             lmc, max_vl_num, sm_sl, subnet_timeout, init_type_reply, active_width, active_speed,
 *                         phys_state, link_layer, flags;
 *     uint16_t            port_cap_flags2;
 * };
 * </pre>
 */
final class IbvPortAttr {

    static final StructLayout LAYOUT = MemoryLayout.structLayout(
            JAVA_INT.withName("state"),
            JAVA_INT.withName("max_mtu"),
            JAVA_INT.withName("active_mtu"),
            JAVA_INT.withName("gid_tbl_len"),
            JAVA_INT.withName("port_cap_flags"),
            JAVA_INT.withName("max_msg_sz"),
            JAVA_INT.withName("bad_pkey_cntr"),
            JAVA_INT.withName("qkey_viol_cntr"),
            JAVA_SHORT.withName("pkey_tbl_len"),
            JAVA_SHORT.withName("lid"),
            JAVA_SHORT.withName("sm_lid"),
            JAVA_BYTE.withName("lmc"),
            JAVA_BYTE.withName("max_vl_num"),
            JAVA_BYTE.withName("sm_sl"),
            JAVA_BYTE.withName("subnet_timeout"),
            JAVA_BYTE.withName("init_type_reply"),
            JAVA_BYTE.withName("active_width"),
            JAVA_BYTE.withName("active_speed"),
            JAVA_BYTE.withName("phys_state"),
            JAVA_BYTE.withName("link_layer"),
            JAVA_BYTE.withName("flags"),
            JAVA_SHORT.withName("port_cap_flags2"),
            MemoryLayout.paddingLayout(2));

    static final long STATE = VerbsLayouts.offset(LAYOUT, "state");
    static final long ACTIVE_MTU = VerbsLayouts.offset(LAYOUT, "active_mtu");
    static final long GID_TBL_LEN = VerbsLayouts.offset(LAYOUT, "gid_tbl_len");
    static final long MAX_MSG_SZ = VerbsLayouts.offset(LAYOUT, "max_msg_sz");
    static final long LID = VerbsLayouts.offset(LAYOUT, "lid");
    static final long ACTIVE_WIDTH = VerbsLayouts.offset(LAYOUT, "active_width");
    static final long ACTIVE_SPEED = VerbsLayouts.offset(LAYOUT, "active_speed");
    static final long LINK_LAYER = VerbsLayouts.offset(LAYOUT, "link_layer");

    /** enum ibv_port_state */
    static final int IBV_PORT_ACTIVE = 4;
    /** IBV_LINK_LAYER_* */
    static final int IBV_LINK_LAYER_INFINIBAND = 1;
    static final int IBV_LINK_LAYER_ETHERNET = 2;

    private IbvPortAttr() {
    }

    static String stateName(int state) {
        return switch (state) {
            case 0 -> "NOP";
            case 1 -> "DOWN";
            case 2 -> "INIT";
            case 3 -> "ARMED";
            case 4 -> "ACTIVE";
            case 5 -> "ACTIVE_DEFER";
            default -> "state " + state;
        };
    }

    /** enum ibv_mtu (1..5) in bytes. */
    static int mtuBytes(int mtu) {
        return mtu >= 1 && mtu <= 5 ? 128 << mtu : 0;
    }
}
