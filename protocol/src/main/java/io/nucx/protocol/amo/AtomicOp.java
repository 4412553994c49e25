package io.nucx.protocol.amo;

/**
 * A 64-bit atomic operation on a peer's registered memory, numbered as UCX's {@code ucp_atomic_op_t}. Each returns
 * the value the word held before (for a post, nobody reads it).
 */
public enum AtomicOp {
    /** word += value. */
    ADD(0),
    /** word = value. */
    SWAP(1),
    /** word = value if word == compare. */
    CSWAP(2),
    /** word &= value. */
    AND(3),
    /** word |= value. */
    OR(4),
    /** word ^= value. */
    XOR(5);

    private final int wire;

    AtomicOp(int wire) {
        this.wire = wire;
    }

    int wire() {
        return wire;
    }

    /** The op with this wire code, or null. */
    static AtomicOp fromWire(int code) {
        for (AtomicOp op : values()) {
            if (op.wire == code) {
                return op;
            }
        }
        return null;
    }
}
