package io.nucx.it.cluster;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

/**
 * What every backend's cluster shares: its nodes, where their logs go, and the cleanup that runs once, on close or
 * by a shutdown hook if the JVM is interrupted with a cluster still open.
 */
abstract class AbstractCluster<N extends AbstractClusterNode> implements Cluster {

    private static final List<AbstractCluster<?>> OPEN = Collections.synchronizedList(new ArrayList<>());

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> List.copyOf(OPEN).forEach(AbstractCluster::close),
                "cluster-cleanup"));
    }

    protected final List<N> nodes = new ArrayList<>();
    protected final Path logDir;

    AbstractCluster(Path logDir) {
        this.logDir = logDir;
    }

    /** Puts a cluster just made in the shutdown hook's care, before it creates anything outside this JVM. */
    static <C extends AbstractCluster<?>> C register(C cluster) {
        OPEN.add(cluster);
        return cluster;
    }

    /** Connects to every node's control socket; the nodes' processes are starting. */
    void attachAll() throws Exception {
        for (N n : nodes) {
            n.attach();
        }
    }

    @Override
    public List<ClusterNode> nodes() {
        return List.copyOf(nodes);
    }

    @Override
    public final synchronized void close() {
        if (OPEN.remove(this)) {
            release();
        }
    }

    /** Removes everything the backend made (processes, networks, files); runs once. */
    protected abstract void release();

    /**
     * NUCX_TCP_BIND_ADDR unless the test set it: on one network, every address (the first is published); on several,
     * the node's address on each, in network order, so its worker has one tcp iface per network and failover can
     * move an endpoint from one network to another.
     */
    static void bindAddresses(Map<String, String> env, List<String> ips) {
        env.putIfAbsent("NUCX_TCP_BIND_ADDR", ips.size() > 1 ? String.join(",", ips) : "0.0.0.0");
    }

    /** Best effort: deletes a temporary directory and what it holds. */
    static void deleteTree(Path dir) {
        try (var walk = Files.walk(dir)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            // best effort: a temporary directory
        }
    }
}
