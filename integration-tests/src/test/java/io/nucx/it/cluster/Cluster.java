package io.nucx.it.cluster;

import java.util.List;
import java.util.Map;

/** A few nucx nodes on hosts of their own, started by a backend (Docker or network namespaces); closed: all gone. */
interface Cluster extends AutoCloseable {

    /**
     * What to start: {@code nodes} nodes with {@code env} (NUCX_* settings); {@code networks} networks every node is
     * on (the first is where addresses are published); {@code colocated}: node 1 shares node 0's IPC and PID
     * namespaces (not its network), as processes of one machine do.
     */
    record Spec(int nodes, Map<String, String> env, int networks, boolean colocated) {
        Spec(int nodes, Map<String, String> env) {
            this(nodes, env, 1, false);
        }
    }

    List<ClusterNode> nodes();

    default ClusterNode node(int i) {
        return nodes().get(i);
    }

    @Override
    void close();
}
