package io.nucx.transport.rdma;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.charset.StandardCharsets;
import java.util.List;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;

/**
 * Helpers shared by the struct classes ({@code IbvQp}, {@code IbvSendWr}...), and the list of every struct nucx reads
 * or writes, which {@code VerbsLayoutTest} checks field by field against gcc's {@code offsetof}/{@code sizeof} on the
 * installed {@code <infiniband/verbs.h>}. Layouts are x86_64/aarch64 LP64 (rdma-core 44 headers; the structs nucx
 * touches are the same in rdma-core HEAD).
 */
final class VerbsLayouts {

    private VerbsLayouts() {
    }

    /** C type name and Java layout of every struct the bindings use; member names are the C field names. */
    static final List<Struct> ALL = List.of(
            new Struct("struct ibv_device", IbvDevice.LAYOUT),
            new Struct("struct ibv_context", IbvContext.LAYOUT),
            new Struct("struct ibv_device_attr", IbvDeviceAttr.LAYOUT),
            new Struct("struct ibv_port_attr", IbvPortAttr.LAYOUT),
            new Struct("union ibv_gid", IbvGid.LAYOUT),
            new Struct("struct ibv_gid_entry", IbvGidEntry.LAYOUT),
            new Struct("struct ibv_pd", IbvPd.LAYOUT),
            new Struct("struct ibv_mr", IbvMr.LAYOUT),
            new Struct("struct ibv_comp_channel", IbvCompChannel.LAYOUT),
            new Struct("struct ibv_cq", IbvCq.LAYOUT),
            new Struct("struct ibv_qp_cap", IbvQpCap.LAYOUT),
            new Struct("struct ibv_qp_init_attr", IbvQpInitAttr.LAYOUT),
            new Struct("struct ibv_qp", IbvQp.LAYOUT),
            new Struct("struct ibv_global_route", IbvGlobalRoute.LAYOUT),
            new Struct("struct ibv_ah_attr", IbvAhAttr.LAYOUT),
            new Struct("struct ibv_qp_attr", IbvQpAttr.LAYOUT),
            new Struct("struct ibv_sge", IbvSge.LAYOUT),
            new Struct("struct ibv_send_wr", IbvSendWr.LAYOUT),
            new Struct("struct ibv_recv_wr", IbvRecvWr.LAYOUT),
            new Struct("struct ibv_wc", IbvWc.LAYOUT),
            new Struct("struct ibv_async_event", IbvAsyncEvent.LAYOUT));

    record Struct(String cName, GroupLayout layout) {
    }

    /** Byte offset of a (possibly nested) member, e.g. {@code offset(IbvQpAttr.LAYOUT, "ah_attr", "dlid")}. */
    static long offset(MemoryLayout layout, String... path) {
        MemoryLayout.PathElement[] p = new MemoryLayout.PathElement[path.length];
        for (int i = 0; i < path.length; i++) {
            p[i] = groupElement(path[i]);
        }
        return layout.byteOffset(p);
    }

    /** A var handle for a scalar member at its offset, taking (segment, base offset). */
    static VarHandle handle(GroupLayout layout, String... path) {
        MemoryLayout.PathElement[] p = new MemoryLayout.PathElement[path.length];
        for (int i = 0; i < path.length; i++) {
            p[i] = groupElement(path[i]);
        }
        return layout.varHandle(p);
    }

    /** {@code char name[n]} as a Java string (up to the first NUL). */
    static String cString(MemorySegment s, long offset, int n) {
        byte[] b = new byte[n];
        MemorySegment.copy(s, ValueLayout.JAVA_BYTE, offset, b, 0, n);
        int len = 0;
        while (len < n && b[len] != 0) {
            len++;
        }
        return new String(b, 0, len, StandardCharsets.US_ASCII);
    }
}
