package io.nucx.protocol;

import io.netty.channel.ChannelPipeline;
import io.nucx.protocol.select.Protocol;

import java.util.List;

/**
 * A family of protocols that share one codec on an endpoint (UCX: the protocols of one file, such as
 * {@code tag/eager_*.c}, plus the active-message handlers that file registers with {@code UCP_DEFINE_AM}). The family
 * declares its protocols for selection and the active-message ids it receives; its codec runs them.
 */
public interface ProtocolFamily {

    /** Short name, e.g. {@code tag/eager}; also its handler's name in the pipeline, prefixed {@code nucx.}. */
    String name();

    /** Its protocols, in tie-break order. */
    List<Protocol> protocols();

    /** The active-message ids whose frames its codec handles ({@link AmIds}). */
    int[] amIds();

    /**
     * Adds the family's handlers at the tail of an endpoint's pipeline (head side first) and returns its codec. The
     * protocol handlers of an endpoint are added before any user handler.
     */
    ProtocolCodec addTo(ChannelPipeline pipeline, EndpointServices endpoint, WorkerProtocols worker);
}
