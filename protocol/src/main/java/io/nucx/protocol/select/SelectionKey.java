package io.nucx.protocol.select;

import java.util.Locale;

/**
 * What a send is, packed into one long, as UCX's 8-byte {@code ucp_proto_select_param_t}: the key of the protocol
 * tables.
 *
 * <pre>
 *  bits  0..7   operation        ({@link Operation} ordinal)
 *  bits  8..15  operation flags  ({@link #FLAG_FAST_COMPLETION}, {@link #FLAG_MULTI_SEND})
 *  bits 16..23  datatype class   ({@link DatatypeClass} ordinal)
 *  bits 24..31  memory type      ({@link MemoryType} ordinal)
 *  bits 32..39  locality         ({@link Locality} ordinal)
 * </pre>
 */
public final class SelectionKey {

    /** Complete as soon as the local buffer may be reused (UCP_OP_ATTR_FLAG_FAST_CMPL). */
    public static final int FLAG_FAST_COMPLETION = 1 << 1;
    /** Optimise for many operations in flight: select on the bottleneck (UCP_OP_ATTR_FLAG_MULTI_SEND). */
    public static final int FLAG_MULTI_SEND = 1 << 3;

    public enum Operation {
        TAG_SEND("tagged message"), TAG_SEND_SYNC("synchronous tagged message"), AM_SEND("active message"),
        STREAM_SEND("stream"), PUT("remote memory write"), GET("remote memory read"), AMO_POST("atomic post"),
        AMO_FETCH("atomic fetch"), AMO_CSWAP("atomic compare-swap"), RNDV_SEND("rendezvous data send"),
        RNDV_RECV("rendezvous data fetch"), RNDV_RECV_DROP("rendezvous data drop");

        private final String description;

        Operation(String description) {
            this.description = description;
        }

        public String description() {
            return description;
        }
    }

    public enum DatatypeClass { CONTIG, IOV, GENERIC }

    /** Java memory: a heap array, a direct buffer, or a native segment. */
    public enum MemoryType { HEAP, DIRECT, NATIVE }

    public enum Locality { SELF, INTRA_NODE, INTER_NODE }

    private SelectionKey() {
    }

    public static long pack(Operation op, int flags, DatatypeClass dt, MemoryType mem, Locality locality) {
        if ((flags & ~0xff) != 0) {
            throw new IllegalArgumentException("operation flags 0x" + Integer.toHexString(flags) + " do not fit 8 bits");
        }
        return op.ordinal() | (long) flags << 8 | (long) dt.ordinal() << 16 | (long) mem.ordinal() << 24
                | (long) locality.ordinal() << 32;
    }

    public static Operation operation(long key) {
        return Operation.values()[(int) (key & 0xff)];
    }

    public static int flags(long key) {
        return (int) (key >>> 8) & 0xff;
    }

    public static DatatypeClass datatype(long key) {
        return DatatypeClass.values()[(int) (key >>> 16) & 0xff];
    }

    public static MemoryType memoryType(long key) {
        return MemoryType.values()[(int) (key >>> 24) & 0xff];
    }

    public static Locality locality(long key) {
        return Locality.values()[(int) (key >>> 32) & 0xff];
    }

    public static boolean multiSend(long key) {
        return (flags(key) & FLAG_MULTI_SEND) != 0;
    }

    /** "tagged message (multi) from heap memory, intra-node" — the title UCX_PROTO_INFO prints. */
    public static String describe(long key) {
        StringBuilder b = new StringBuilder(operation(key).description());
        int f = flags(key);
        if (f != 0) {
            b.append(" (");
            if ((f & FLAG_FAST_COMPLETION) != 0) {
                b.append("fast-completion");
            }
            if ((f & FLAG_MULTI_SEND) != 0) {
                b.append((f & FLAG_FAST_COMPLETION) != 0 ? ",multi" : "multi");
            }
            b.append(')');
        }
        b.append(" from ").append(memoryType(key).name().toLowerCase(Locale.ROOT)).append(" memory");
        if (datatype(key) != DatatypeClass.CONTIG) {
            b.append(", ").append(datatype(key).name().toLowerCase(Locale.ROOT));
        }
        return b.toString();
    }
}
