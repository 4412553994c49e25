package io.nucx.it.cluster;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.exception.InternalServerErrorException;
import com.github.dockerjava.api.model.Capability;
import com.github.dockerjava.api.model.ContainerNetwork;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.containers.BindMode;
import org.testcontainers.containers.Container;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.Network;
import org.testcontainers.containers.wait.strategy.Wait;
import org.testcontainers.utility.DockerImageName;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * A cluster of {@code nucx node} containers under Testcontainers, from the image integration-tests/image/build.sh
 * makes offline. Each node's control channel is a Unix socket in a host directory bind-mounted at /control, so it
 * does not cross the networks the faults act on. Everything is labelled {@code io.nucx.it=cluster} and removed on
 * close, by a shutdown hook if the JVM is interrupted, and by .ci/run after a killed run.
 */
final class DockerCluster extends AbstractCluster<DockerCluster.DockerNode> {

    static final String LABEL = "io.nucx.it";
    /** JVMs in containers: small heaps (four share this machine), room for 256 MiB messages in direct memory. */
    static final String JAVA_OPTS = "-Xmx256m -XX:MaxDirectMemorySize=1g -XX:+UseSerialGC "
            + "-Dio.netty.leakDetection.level=paranoid -Dio.netty.leakDetection.targetRecords=8";
    private static String image;

    private final DockerClient docker = DockerClientFactory.instance().client();
    private final List<Network> networks = new ArrayList<>();
    private final List<String> subnets = new ArrayList<>();
    private final Path controlRoot;

    private DockerCluster(Path logDir) throws IOException {
        super(logDir);
        this.controlRoot = Files.createTempDirectory("nucx-cluster");
    }

    /** Whether tests can run here: an engine answers. */
    static boolean available() {
        try {
            return DockerClientFactory.instance().isDockerAvailable();
        } catch (Throwable t) {
            return false;
        }
    }

    /** The node image's tag; builds it (or finds it cached) once per JVM. */
    static synchronized String image() throws IOException, InterruptedException {
        if (image == null) {
            Path root = Path.of(System.getProperty("cluster.projectRoot", ".."));
            Path script = root.resolve("integration-tests/image/build.sh");
            Process p = new ProcessBuilder("bash", script.toString()).redirectError(ProcessBuilder.Redirect.INHERIT)
                    .start();
            String out = new String(p.getInputStream().readAllBytes()).trim();
            if (!p.waitFor(15, TimeUnit.MINUTES) || p.exitValue() != 0) {
                throw new IOException(script + " failed (" + (p.isAlive() ? "timeout" : "exit " + p.exitValue())
                        + "): " + out);
            }
            image = out.substring(out.lastIndexOf('\n') + 1);
        }
        return image;
    }

    static DockerCluster start(Spec spec, Path logDir) throws Exception {
        DockerCluster c = register(new DockerCluster(logDir));
        try {
            String tag = image();
            for (int i = 0; i < spec.networks(); i++) {
                c.createNetwork();
            }
            for (int i = 0; i < spec.nodes(); i++) {
                DockerNode n = new DockerNode(c, "n" + (i + 1), tag, spec, i,
                        i == 1 && spec.colocated() ? c.nodes.get(0) : null);
                c.nodes.add(n);
            }
            // Containers start one by one (the colocated one needs its partner's id), their JVMs come up together.
            for (DockerNode n : c.nodes) {
                n.startContainer();
            }
            c.attachAll();
            return c;
        } catch (Throwable t) {
            c.close();
            throw t;
        }
    }

    /** Node {@code index}'s address on network {@code net}: fixed, so it is known before the node starts. */
    private String ip(int net, int index) {
        String subnet = subnets.get(net);
        return subnet.substring(0, subnet.lastIndexOf('.') + 1) + (10 + index);
    }

    /** A bridge network with a subnet of our choosing, so a node can come back with its address. */
    private void createNetwork() {
        int base = (int) (ProcessHandle.current().pid() % 200);
        RuntimeException last = null;
        for (int attempt = 0; attempt < 40; attempt++) {
            String subnet = "10.232." + ((base + networks.size() * 7 + attempt) % 250) + ".0/24";
            Network net = Network.builder().createNetworkCmdModifier(cmd -> {
                Map<String, String> labels = new HashMap<>(cmd.getLabels() == null ? Map.of() : cmd.getLabels());
                labels.put(LABEL, "cluster");
                cmd.withLabels(labels).withIpam(new com.github.dockerjava.api.model.Network.Ipam()
                        .withConfig(new com.github.dockerjava.api.model.Network.Ipam.Config().withSubnet(subnet)));
            }).build();
            try {
                net.getId(); // created here
                networks.add(net);
                subnets.add(subnet);
                return;
            } catch (RuntimeException overlap) { // "Pool overlaps with other one on this address space"
                last = overlap;
            }
        }
        throw new IllegalStateException("no free 10.232.x.0/24 subnet for a test network", last);
    }

    @Override
    protected void release() {
        for (DockerNode n : nodes) {
            n.close();
        }
        for (Network net : networks) {
            try {
                net.close();
            } catch (RuntimeException e) {
                System.err.println("cluster: network " + net.getId() + " not removed: " + e);
            }
        }
        deleteTree(controlRoot);
    }

    /** A node's container, with a hook between its creation and its start. */
    static final class NodeContainer extends GenericContainer<NodeContainer> {
        private final Consumer<String> created;

        NodeContainer(DockerImageName image, Consumer<String> created) {
            super(image);
            this.created = created;
        }

        @Override
        protected void containerIsCreated(String containerId) {
            created.accept(containerId);
        }
    }

    /** One container running {@code nucx node}. */
    static final class DockerNode extends AbstractClusterNode {
        private static final int PAUSE_ATTEMPTS = 5;

        private final DockerCluster cluster;
        private final NodeContainer container;
        private final Path controlDir;
        private final DockerNode partner;
        private final List<String> ips = new ArrayList<>();

        DockerNode(DockerCluster cluster, String name, String tag, Spec spec, int index, DockerNode partner)
                throws IOException {
            super(name, cluster.controlRoot.resolve(name).resolve("node.sock"));
            this.cluster = cluster;
            this.partner = partner;
            this.controlDir = Files.createDirectories(cluster.controlRoot.resolve(name));
            for (int k = 0; k < cluster.networks.size(); k++) {
                ips.add(cluster.ip(k, index));
            }
            Map<String, String> env = new HashMap<>(spec.env());
            bindAddresses(env, ips);
            env.put("NUCX_JAVA_OPTS", JAVA_OPTS);
            container = new NodeContainer(DockerImageName.parse(tag), this::joinOtherNetworks)
                    .withNetwork(cluster.networks.get(0))
                    .withNetworkAliases(name)
                    .withEnv(env)
                    .withLabel(LABEL, "cluster")
                    .withFileSystemBind(controlDir.toString(), "/control", BindMode.READ_WRITE)
                    .withCommand("node", "--control", "unix:/control/node.sock", "--name", name,
                            "--max-seconds", "1800")
                    .waitingFor(Wait.forLogMessage(".*nucx node ready.*\\n", 1).withStartupTimeout(START))
                    .withCreateContainerCmdModifier(cmd -> {
                        cmd.withHostName(name).withIpv4Address(ips.get(0));
                        var host = cmd.getHostConfig();
                        host.withCapAdd(Capability.NET_ADMIN); // tc netem on its own interface
                        if (spec.colocated() && index == 0) {
                            host.withIpcMode("shareable").withCapAdd(Capability.NET_ADMIN, Capability.SYS_PTRACE);
                        }
                        if (partner != null) {
                            String id = partner.container.getContainerId();
                            host.withIpcMode("container:" + id).withPidMode("container:" + id)
                                    .withCapAdd(Capability.NET_ADMIN, Capability.SYS_PTRACE);
                        }
                    });
        }

        void startContainer() {
            container.start();
        }

        /** Created, not started: on every network before its worker binds its addresses there. */
        private void joinOtherNetworks(String containerId) {
            for (int k = 1; k < cluster.networks.size(); k++) {
                cluster.docker.connectToNetworkCmd().withContainerId(containerId)
                        .withNetworkId(cluster.networks.get(k).getId())
                        .withContainerNetwork(new ContainerNetwork().withAliases(name)
                                .withIpamConfig(new ContainerNetwork.Ipam().withIpv4Address(ips.get(k))))
                        .exec();
            }
        }

        @Override
        public void kill() {
            cluster.docker.killContainerCmd(container.getContainerId()).exec();
        }

        @Override
        public long pause() throws InterruptedException {
            // The cgroup freezer gives up on a task it cannot stop at that instant ("unable to freeze") and thaws
            // the rest: nothing was paused, so the engine's refusal is tried again, and the fault starts with
            // the attempt that took.
            for (int attempt = 1; ; attempt++) {
                long at = System.currentTimeMillis();
                try {
                    cluster.docker.pauseContainerCmd(container.getContainerId()).exec();
                    return at;
                } catch (InternalServerErrorException refused) {
                    String why = String.valueOf(refused.getMessage()).strip();
                    if (attempt == PAUSE_ATTEMPTS || !why.contains("unable to freeze")) {
                        throw refused;
                    }
                    System.out.println("cluster: docker pause of " + name + " refused (" + why + "), attempt "
                            + attempt + " of " + PAUSE_ATTEMPTS);
                    Thread.sleep(500);
                }
            }
        }

        @Override
        public void resume() {
            cluster.docker.unpauseContainerCmd(container.getContainerId()).exec();
        }

        @Override
        public void disconnect(int index) {
            cluster.docker.disconnectFromNetworkCmd().withContainerId(container.getContainerId())
                    .withNetworkId(cluster.networks.get(index).getId()).exec();
        }

        @Override
        public void reconnect(int index) {
            cluster.docker.connectToNetworkCmd().withContainerId(container.getContainerId())
                    .withNetworkId(cluster.networks.get(index).getId())
                    .withContainerNetwork(new ContainerNetwork().withAliases(name)
                            .withIpamConfig(new ContainerNetwork.Ipam().withIpv4Address(ips.get(index))))
                    .exec();
        }

        @Override
        public String device(int index) throws Exception {
            String out = exec("ip", "-o", "-4", "addr", "show", "to", ips.get(index)).trim();
            String[] w = out.split("\\s+");
            if (w.length < 2) {
                throw new IllegalStateException(name + ": no interface with " + ips.get(index) + ": " + out);
            }
            return w[1];
        }

        private String exec(String... cmd) throws Exception {
            Container.ExecResult r = container.execInContainer(cmd);
            if (r.getExitCode() != 0) {
                throw new IllegalStateException(name + ": " + String.join(" ", cmd) + " failed (" + r.getExitCode()
                        + "): " + r.getStderr() + r.getStdout());
            }
            return r.getStdout();
        }

        @Override
        public String shell(String script) throws Exception {
            return exec("sh", "-c", script);
        }

        @Override
        public void restart() throws Exception {
            detach();
            cluster.docker.stopContainerCmd(container.getContainerId()).withTimeout(20).exec(); // SIGTERM, then KILL
            Files.deleteIfExists(socket);
            cluster.docker.startContainerCmd(container.getContainerId()).exec();
            attach();
        }

        @Override
        public String infoLanes(String peerAddress) throws Exception {
            return exec("nucx", "info", "--lanes", peerAddress);
        }

        void close() {
            detach();
            try {
                if (container.getContainerId() != null) {
                    Files.writeString(Files.createDirectories(cluster.logDir).resolve(name + ".log"),
                            container.getLogs());
                }
            } catch (Exception e) {
                System.err.println("cluster: logs of " + name + " not kept: " + e);
            }
            try {
                container.stop(); // removes the container
            } catch (RuntimeException e) {
                System.err.println("cluster: container " + name + " not removed: " + e);
            }
        }
    }
}
