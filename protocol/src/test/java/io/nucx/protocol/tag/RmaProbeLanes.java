package io.nucx.protocol.tag;

import io.nucx.protocol.EndpointConfig;
import io.nucx.protocol.select.ProbeParams;
import io.nucx.protocol.select.SelectionKey;
import io.nucx.transport.Capability;
import io.nucx.transport.IfaceAttributes;
import io.nucx.transport.cma.Cma;

import java.util.EnumSet;

/**
 * The mock lanes with stated figures the rendezvous zero-copy probe tests share: a tcp-like AM lane (UCX's tcp:
 * 5.26 us, 50 us overhead, 2.2 GB/s, 64 KiB frames) and a cma-like RMA lane (UCX's cma: 80 ns, 2 us, 11145 MB/s).
 */
final class RmaProbeLanes {

    static final double COPY_BW = ProbeParams.DEFAULT_COPY_BANDWIDTH;
    static final IfaceAttributes TCP = new IfaceAttributes(EnumSet.of(Capability.AM_SHORT,
            Capability.AM_BCOPY), 8192, 65536, 64, 5.26e-6, 0, 0, 2.2e9, 50e-6, 0);
    static final IfaceAttributes CMA = new IfaceAttributes(EnumSet.of(Capability.GET_ZCOPY,
            Capability.PUT_ZCOPY), 0, 0, 0, 80e-9, 0, 11145e6, 0, 2e-6, 0, Long.MAX_VALUE, Integer.MAX_VALUE,
            Cma.CHUNK);
    static final EndpointConfig TCP_ONLY = new EndpointConfig("tcp/lo", TCP);
    static final EndpointConfig TCP_CMA = new EndpointConfig("tcp/lo", TCP, "cma/memory", CMA);
    /** A contiguous send of direct memory to another node. */
    static final long DIRECT = key(SelectionKey.DatatypeClass.CONTIG, SelectionKey.MemoryType.DIRECT);

    private RmaProbeLanes() {
    }

    /** The selection key of a tag send to another node with this datatype and memory. */
    static long key(SelectionKey.DatatypeClass dt, SelectionKey.MemoryType mem) {
        return SelectionKey.pack(SelectionKey.Operation.TAG_SEND, 0, dt, mem, SelectionKey.Locality.INTER_NODE);
    }
}
