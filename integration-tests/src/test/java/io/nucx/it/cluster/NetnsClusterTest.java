package io.nucx.it.cluster;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;

import java.nio.file.Path;

/**
 * {@link ClusterScenarios} on network-namespace hosts, for machines without a container engine: each node a JVM in
 * its own network, IPC and PID namespaces, the networks bridges in a namespace of their own. Needs root.
 */
class NetnsClusterTest extends ClusterScenarios {

    @BeforeAll
    static void tools() {
        String why = NetnsCluster.unavailableReason();
        Assumptions.assumeTrue(why == null, "network-namespace hosts: " + why);
    }

    @Override
    protected Cluster start(Cluster.Spec spec, Path logDir) throws Exception {
        return NetnsCluster.start(spec, logDir);
    }
}
