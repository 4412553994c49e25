package io.nucx.protocol;

import io.netty.channel.ChannelPipeline;
import io.nucx.protocol.select.Protocol;

import java.util.List;

/**
 * A family of protocols that share one codec on an endpoint (UCX: the protocols of one file, such as
 * {@code tag/eager_*.c}, plus the active-message handlers that file registers with {@code UCP_DEFINE_AM}): its
 * protocols for selection, the active-message ids its codec receives, and how its handlers join a pipeline.
 *
 * @param name      short name, e.g. {@code tag/eager}
 * @param protocols its protocols, in tie-break order
 * @param amIds     the active-message ids ({@link AmIds}) whose frames its codec handles
 * @param installer adds its handlers at the tail of an endpoint's pipeline and returns its codec
 */
public record ProtocolFamily(String name, List<Protocol> protocols, int[] amIds, Installer installer) {

    /** Adds a family's handlers to an endpoint's pipeline, head side first, before any user handler. */
    @FunctionalInterface
    public interface Installer {
        ProtocolCodec addTo(ChannelPipeline pipeline, EndpointServices endpoint, WorkerProtocols worker);
    }

    public ProtocolFamily {
        protocols = List.copyOf(protocols);
        amIds = amIds.clone();
    }

    @Override
    public int[] amIds() {
        return amIds.clone();
    }

    /** Adds the family's handlers to {@code pipeline} and returns its codec. */
    public ProtocolCodec addTo(ChannelPipeline pipeline, EndpointServices endpoint, WorkerProtocols worker) {
        return installer.addTo(pipeline, endpoint, worker);
    }
}
