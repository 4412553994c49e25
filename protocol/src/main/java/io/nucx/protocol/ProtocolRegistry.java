package io.nucx.protocol;

import io.netty.channel.ChannelPipeline;
import io.nucx.protocol.am.AmCodec;
import io.nucx.protocol.amo.AmoCodec;
import io.nucx.protocol.rma.RmaCodec;
import io.nucx.protocol.select.Protocol;
import io.nucx.protocol.stream.StreamCodec;
import io.nucx.protocol.tag.EagerProtocols;
import io.nucx.protocol.tag.RndvProtocols;

import java.util.ArrayList;
import java.util.List;

/**
 * The one list of protocol families (UCX's {@code ucp_protocols} plus {@code ucp_am_handlers[]}): its order is the
 * protocols' tie-break order in selection (at equal cost a copy protocol beats a zero-copy one, eager beats
 * rendezvous), and its families fill the active-message id table that routes arriving frames. An id two families
 * claim, or one no family claims, is refused here, so the table cannot silently misroute.
 */
public final class ProtocolRegistry {

    /**
     * Stream, active messages, tag eager, tag rendezvous, atomics, the RMA API. The stream comes first, nearest the
     * user: its writes wait for credit before the eager codec selects their protocol, and it receives what the tag
     * codecs carried for it; active messages likewise sit above the eager codec that carries them.
     */
    public static final ProtocolRegistry DEFAULT = new ProtocolRegistry(List.of(StreamCodec.FAMILY, AmCodec.FAMILY,
            EagerProtocols.FAMILY, RndvProtocols.FAMILY, AmoCodec.FAMILY, RmaCodec.FAMILY));

    private final List<ProtocolFamily> families;
    private final List<Protocol> protocols;
    private final ProtocolFamily[] owners = new ProtocolFamily[256];

    public ProtocolRegistry(List<ProtocolFamily> families) {
        this.families = List.copyOf(families);
        List<Protocol> all = new ArrayList<>();
        for (ProtocolFamily f : families) {
            all.addAll(f.protocols());
            for (int id : f.amIds()) {
                if (id <= AmIds.WIREUP || id > 255) {
                    throw new IllegalArgumentException(f.name() + " claims active-message id " + id + ", which is "
                            + (id == AmIds.WIREUP ? "wireup's" : "reserved or out of range"));
                }
                if (owners[id] != null) {
                    throw new IllegalArgumentException("active-message id " + id + " (" + AmIds.name(id)
                            + ") is claimed by " + owners[id].name() + " and " + f.name());
                }
                owners[id] = f;
            }
        }
        this.protocols = List.copyOf(all);
    }

    /** The families, in order. */
    public List<ProtocolFamily> families() {
        return families;
    }

    /** Every protocol of every family, in tie-break order. */
    public List<Protocol> protocols() {
        return protocols;
    }

    /** The family whose codec handles frames of {@code amId}, or null when none does (the frame is a protocol error). */
    public ProtocolFamily owner(int amId) {
        return amId < 0 || amId > 255 ? null : owners[amId];
    }

    /**
     * Adds every family's handlers to an endpoint's pipeline: the last family nearest the head, so outbound messages
     * pass the first family first (tag eager selects the protocol and hands rendezvous sends down to tag rendezvous).
     * Returns the codecs, in registry order.
     */
    public List<ProtocolCodec> initPipeline(ChannelPipeline pipeline, EndpointServices endpoint,
                                            WorkerProtocols worker) {
        ProtocolCodec[] codecs = new ProtocolCodec[families.size()];
        for (int i = families.size() - 1; i >= 0; i--) {
            codecs[i] = families.get(i).addTo(pipeline, endpoint, worker);
        }
        return List.of(codecs);
    }
}
