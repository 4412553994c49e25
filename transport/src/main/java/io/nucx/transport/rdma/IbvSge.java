package io.nucx.transport.rdma;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * A scatter/gather element; a flyweight over preallocated memory.
 * <pre>
 * struct ibv_sge {
 *     uint64_t addr;
 *     uint32_t length;
 *     uint32_t lkey;
 * };
 * </pre>
 */
final class IbvSge {

    static final StructLayout LAYOUT = MemoryLayout.structLayout(
            JAVA_LONG.withName("addr"),
            JAVA_INT.withName("length"),
            JAVA_INT.withName("lkey"));

    static final long ADDR = VerbsLayouts.offset(LAYOUT, "addr");
    static final long LENGTH = VerbsLayouts.offset(LAYOUT, "length");
    static final long LKEY = VerbsLayouts.offset(LAYOUT, "lkey");

    private IbvSge() {
    }

    static void set(MemorySegment sge, long addr, int length, int lkey) {
        sge.set(JAVA_LONG, ADDR, addr);
        sge.set(JAVA_INT, LENGTH, length);
        sge.set(JAVA_INT, LKEY, lkey);
    }
}
