package io.nucx.transport.rdma;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * <pre>
 * struct ibv_device {
 *     struct _ibv_device_ops  _ops;             // two function pointers, unused
 *     enum ibv_node_type      node_type;
 *     enum ibv_transport_type transport_type;
 *     char                    name[IBV_SYSFS_NAME_MAX];      // 64
 *     char                    dev_name[IBV_SYSFS_NAME_MAX];
 *     char                    dev_path[IBV_SYSFS_PATH_MAX];  // 256
 *     char                    ibdev_path[IBV_SYSFS_PATH_MAX];
 * };
 * </pre>
 */
final class IbvDevice {

    static final StructLayout LAYOUT = MemoryLayout.structLayout(
            MemoryLayout.paddingLayout(16),
            JAVA_INT.withName("node_type"),
            JAVA_INT.withName("transport_type"),
            MemoryLayout.sequenceLayout(64, JAVA_BYTE).withName("name"),
            MemoryLayout.sequenceLayout(64, JAVA_BYTE).withName("dev_name"),
            MemoryLayout.sequenceLayout(256, JAVA_BYTE).withName("dev_path"),
            MemoryLayout.sequenceLayout(256, JAVA_BYTE).withName("ibdev_path"));
    static final long NAME = VerbsLayouts.offset(LAYOUT, "name");

    private IbvDevice() {
    }

    static String name(MemorySegment device) {
        return VerbsLayouts.cString(device.reinterpret(LAYOUT.byteSize()), NAME, 64);
    }
}
