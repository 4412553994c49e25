package io.nucx.it.cluster;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;

import java.nio.file.Path;

/**
 * {@link ClusterScenarios} on Docker containers under Testcontainers: each node a container of the offline-built
 * node image on its own bridge network. Skipped where no engine answers, except in CI (CI=true), where .ci/run has
 * installed and started one, so a missing engine is a failure there.
 */
class DockerClusterTest extends ClusterScenarios {

    @BeforeAll
    static void engine() {
        boolean available = DockerCluster.available();
        if (!available && "true".equals(System.getenv("CI"))) {
            throw new AssertionError("CI: no Docker engine answers; .ci/run should have started one");
        }
        Assumptions.assumeTrue(available, "no Docker engine here");
    }

    @Override
    protected Cluster start(Cluster.Spec spec, Path logDir) throws Exception {
        return DockerCluster.start(spec, logDir);
    }
}
