package io.nucx.protocol.select;

import io.nucx.protocol.EndpointConfig;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * Protocol tables of one endpoint configuration, built lazily on the first send of each key and shared by every
 * endpoint with that configuration (UCX's {@code ucp_proto_select_t}). A one-entry cache in front of the hash makes
 * the repeated key (the common case) a compare. Confined to the worker's event loop.
 */
public final class SelectionCache {

    private final List<Protocol> registry;
    private final EndpointConfig config;
    private final SelectionKey.Locality locality;
    private final long bcopyThresh;
    private final long rndvThresh;
    private final long eagerMax;
    private final long zcopyThresh;
    private final double copyBandwidth;
    private final Consumer<String> onNewTable;
    private final Map<Long, ProtoTable> tables = new HashMap<>();
    private long lastKey = -1;
    private ProtoTable lastTable;

    /**
     * @param onNewTable receives each new table formatted as UCX_PROTO_INFO prints it, or null to skip formatting
     */
    public SelectionCache(List<Protocol> registry, EndpointConfig config, SelectionKey.Locality locality,
                          long bcopyThresh, long rndvThresh, Consumer<String> onNewTable) {
        this(registry, config, locality, bcopyThresh, ProtoCandidate.AUTO, rndvThresh, onNewTable);
    }

    /**
     * @param bcopyThresh NUCX_BCOPY_THRESH, {@link ProtoCandidate#AUTO} or a size
     * @param zcopyThresh NUCX_ZCOPY_THRESH, {@link ProtoCandidate#AUTO}, a size or {@link ProtoCandidate#DISABLED}
     * @param rndvThresh  NUCX_RNDV_THRESH, {@link ProtoCandidate#AUTO} or a size
     * @param onNewTable  receives each new table formatted as UCX_PROTO_INFO prints it, or null to skip formatting
     */
    public SelectionCache(List<Protocol> registry, EndpointConfig config, SelectionKey.Locality locality,
                          long bcopyThresh, long zcopyThresh, long rndvThresh, Consumer<String> onNewTable) {
        this(registry, config, locality, bcopyThresh, zcopyThresh, rndvThresh, ProtoCandidate.NEVER,
                ProbeParams.DEFAULT_COPY_BANDWIDTH, onNewTable);
    }

    /**
     * @param eagerMax      NUCX_EAGER_MAX, or {@link ProtoCandidate#NEVER} for no bound on eager sizes
     * @param copyBandwidth the memcpy bandwidth copies are charged at, bytes/s (measured, or
     *                      {@link ProbeParams#DEFAULT_COPY_BANDWIDTH})
     */
    public SelectionCache(List<Protocol> registry, EndpointConfig config, SelectionKey.Locality locality,
                          long bcopyThresh, long zcopyThresh, long rndvThresh, long eagerMax, double copyBandwidth,
                          Consumer<String> onNewTable) {
        this.eagerMax = eagerMax;
        this.copyBandwidth = copyBandwidth;
        this.registry = List.copyOf(registry);
        this.config = config;
        this.locality = locality;
        this.bcopyThresh = bcopyThresh;
        this.zcopyThresh = zcopyThresh;
        this.rndvThresh = rndvThresh;
        this.onNewTable = onNewTable;
    }

    public EndpointConfig config() {
        return config;
    }

    /** Where the peer is; part of every key built for this configuration. */
    public SelectionKey.Locality locality() {
        return locality;
    }

    /** The table for {@code key}, built on first use. */
    public ProtoTable table(long key) {
        if (key == lastKey) {
            return lastTable;
        }
        ProtoTable t = tables.get(key);
        if (t == null) {
            t = ProtoSelector.select(registry, new ProbeParams(config, key, bcopyThresh, rndvThresh,
                    copyBandwidth, zcopyThresh, eagerMax));
            tables.put(key, t);
            if (onNewTable != null) {
                onNewTable.accept(t.format(config.amLane()));
            }
        }
        lastKey = key;
        lastTable = t;
        return t;
    }
}
