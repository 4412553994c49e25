package io.nucx.protocol.select;

import java.util.function.Consumer;

/**
 * A protocol as the selection engine sees it (UCX's {@code ucp_proto_t}): a name, a description, and a pure probe
 * that declares, for one endpoint configuration and selection key, what the protocol would cost over which sizes —
 * or declines by adding nothing. How the protocol sends lives in its codec handler, apart from this.
 */
public interface Protocol {

    /** Short id, e.g. {@code egr/multi/bcopy}. */
    String name();

    /** What a table prints, e.g. "multi-frag eager copy-in copy-out". */
    String description();

    /** Adds zero or more candidates. Must be pure: its results are cached per (configuration, key). */
    void probe(ProbeParams params, Consumer<ProtoCandidate> out);
}
