package io.nucx.transport;

import java.util.EnumSet;
import java.util.Set;

/**
 * Iface capability flags, named and numbered as UCT's {@code UCT_IFACE_FLAG_*} bits
 * (research/ucx-internals.md §5) so that a UCX user reads them the same way.
 */
public enum Capability {
    AM_SHORT(0),
    AM_BCOPY(1),
    AM_ZCOPY(2),
    PENDING(3),
    PUT_SHORT(4),
    PUT_BCOPY(5),
    PUT_ZCOPY(6),
    GET_SHORT(8),
    GET_BCOPY(9),
    GET_ZCOPY(10),
    ATOMIC32(30),
    ATOMIC64(31),
    ERRHANDLE_PEER_FAILURE(38),
    EP_CHECK(39),
    CONNECT_TO_IFACE(40),
    CONNECT_TO_EP(41),
    CB_SYNC(44);

    private final int bit;

    Capability(int bit) {
        this.bit = bit;
    }

    /** The UCT bit number. */
    public int bit() {
        return bit;
    }

    /** Packs a set into UCT's 64-bit flag word. */
    public static long pack(Set<Capability> caps) {
        long v = 0;
        for (Capability c : caps) {
            v |= 1L << c.bit;
        }
        return v;
    }

    /** Unpacks UCT's flag word; unknown bits are ignored. */
    public static EnumSet<Capability> unpack(long flags) {
        EnumSet<Capability> set = EnumSet.noneOf(Capability.class);
        for (Capability c : values()) {
            if ((flags & (1L << c.bit)) != 0) {
                set.add(c);
            }
        }
        return set;
    }
}
