package io.nucx.transport.rdma;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.UnionLayout;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * <pre>
 * union ibv_gid {
 *     uint8_t raw[16];
 *     struct {
 *         __be64 subnet_prefix;
 *         __be64 interface_id;
 *     } global;
 * };
 * </pre>
 */
final class IbvGid {

    static final UnionLayout LAYOUT = MemoryLayout.unionLayout(
            MemoryLayout.sequenceLayout(16, JAVA_BYTE).withName("raw"),
            MemoryLayout.structLayout(
                    JAVA_LONG.withName("subnet_prefix"),
                    JAVA_LONG.withName("interface_id")).withName("global"));

    static final int SIZE = 16;

    private IbvGid() {
    }
}
