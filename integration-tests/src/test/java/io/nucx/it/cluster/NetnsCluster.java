package io.nucx.it.cluster;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A cluster without Docker: each node a {@code nucx node} JVM in a network namespace of its own ({@code ip netns}),
 * with its own IPC and PID namespaces and a private /dev/shm ({@code unshare}), as a container has; each network a
 * bridge inside a "switch" namespace of its own (so the host's netfilter rules, e.g. Docker's FORWARD policy, do not
 * see its frames), joined to each node by a veth pair ({@code eth0}, {@code eth1} in the node). Faults: SIGKILL,
 * SIGSTOP/SIGCONT, the veth's switch end down/up, tc and iptables in the node's namespace. Needs root, ip(8),
 * unshare and nsenter. Everything it made is removed on close, or by a shutdown hook.
 */
final class NetnsCluster extends AbstractCluster<NetnsCluster.NetnsNode> {

    private final String prefix;
    private final String tag;
    private final Path dir;
    private final List<String> namespaces = new ArrayList<>();
    private String switchNs;

    private NetnsCluster(Path logDir) throws IOException {
        super(logDir);
        long pid = ProcessHandle.current().pid();
        this.tag = Long.toString(pid % 100000);
        this.prefix = "nucx-cl-" + pid + "-" + Long.toHexString(System.nanoTime() & 0xffff);
        this.dir = Files.createTempDirectory("nucx-netns");
    }

    /** Root with ip netns, unshare and nsenter. */
    static String unavailableReason() {
        if (!"root".equals(System.getProperty("user.name"))) {
            return "needs root";
        }
        for (String tool : List.of("ip", "unshare", "nsenter", "tc", "iptables")) {
            try {
                if (run(false, "sh", "-c", "command -v " + tool) != 0) {
                    return tool + " not found";
                }
            } catch (IOException | InterruptedException e) {
                return "cannot run sh: " + e;
            }
        }
        return null;
    }

    static NetnsCluster start(Spec spec, Path logDir) throws Exception {
        NetnsCluster c = register(new NetnsCluster(logDir));
        try {
            c.switchNs = c.netns("sw");
            for (int k = 0; k < spec.networks(); k++) {
                c.inNs(c.switchNs, "ip", "link", "add", "br" + k, "type", "bridge");
                c.inNs(c.switchNs, "ip", "link", "set", "br" + k, "up");
            }
            for (int i = 0; i < spec.nodes(); i++) {
                String ns = c.netns("n" + (i + 1));
                c.inNs(ns, "ip", "link", "set", "lo", "up");
                for (int k = 0; k < spec.networks(); k++) {
                    String host = "nx" + c.tag + "h" + i + k; // at most 15 characters
                    run(true, "ip", "link", "add", host, "type", "veth", "peer", "name", "eth" + k, "netns", ns);
                    run(true, "ip", "link", "set", host, "netns", c.switchNs);
                    c.inNs(c.switchNs, "ip", "link", "set", host, "master", "br" + k);
                    c.inNs(c.switchNs, "ip", "link", "set", host, "up");
                    c.inNs(ns, "ip", "addr", "add", ip(k, i) + "/24", "dev", "eth" + k);
                    c.inNs(ns, "ip", "link", "set", "eth" + k, "up");
                }
                c.nodes.add(new NetnsNode(c, "n" + (i + 1), ns, i, spec));
            }
            for (NetnsNode n : c.nodes) {
                n.launch(spec.colocated() && n.index == 1 ? c.nodes.get(0) : null);
            }
            c.attachAll();
            return c;
        } catch (Throwable t) {
            c.close();
            throw t;
        }
    }

    /** Node {@code index}'s address on network {@code net}. */
    private static String ip(int net, int index) {
        return "10.233." + net + "." + (10 + index);
    }

    private String netns(String suffix) throws Exception {
        String ns = prefix + "-" + suffix;
        run(true, "ip", "netns", "add", ns);
        namespaces.add(ns);
        return ns;
    }

    private void inNs(String ns, String... cmd) throws Exception {
        List<String> all = new ArrayList<>(List.of("ip", "netns", "exec", ns));
        all.addAll(List.of(cmd));
        run(true, all.toArray(String[]::new));
    }

    static int run(boolean check, String... cmd) throws IOException, InterruptedException {
        return runForOutput(check, cmd).code();
    }

    record Result(int code, String output) {
    }

    static Result runForOutput(boolean check, String... cmd) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IOException(String.join(" ", cmd) + " did not finish");
        }
        if (check && p.exitValue() != 0) {
            throw new IOException(String.join(" ", cmd) + " failed (" + p.exitValue() + "): " + out);
        }
        return new Result(p.exitValue(), out);
    }

    @Override
    protected void release() {
        for (NetnsNode n : nodes) {
            n.stopProcess();
        }
        for (String ns : namespaces) { // a namespace takes its veth ends and bridges with it
            try {
                run(false, "ip", "netns", "del", ns);
            } catch (Exception e) {
                System.err.println("cluster: namespace " + ns + " not removed: " + e);
            }
        }
        deleteTree(dir);
    }

    /** One node: a JVM in its namespaces, and the processes that put it there. */
    static final class NetnsNode extends AbstractClusterNode {
        private final NetnsCluster cluster;
        private final String ns;
        private final int index;
        private final Spec spec;
        private NetnsNode partner;
        private Process launcher;
        private long javaPid;
        private int runs;

        NetnsNode(NetnsCluster cluster, String name, String ns, int index, Spec spec) {
            super(name, cluster.dir.resolve(name + ".sock"));
            this.cluster = cluster;
            this.ns = ns;
            this.index = index;
            this.spec = spec;
        }

        private List<String> java(String... args) {
            List<String> cmd = new ArrayList<>(List.of(ProcessHandle.current().info().command().orElseThrow(),
                    "--enable-native-access=ALL-UNNAMED"));
            cmd.addAll(List.of(DockerCluster.JAVA_OPTS.split(" ")));
            cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), "io.nucx.examples.NucxMain"));
            cmd.addAll(List.of(args));
            return cmd;
        }

        private void environment(ProcessBuilder pb) {
            pb.environment().keySet().removeIf(k -> k.startsWith("NUCX_"));
            pb.environment().putAll(spec.env());
            List<String> ips = new ArrayList<>();
            for (int k = 0; k < spec.networks(); k++) {
                ips.add(ip(k, index));
            }
            bindAddresses(pb.environment(), ips);
        }

        void launch(NetnsNode with) throws Exception {
            partner = with;
            List<String> cmd = new ArrayList<>(List.of("ip", "netns", "exec", ns));
            if (partner == null) { // own IPC and PID namespaces, own /dev/shm and /proc, as in a container
                cmd.addAll(List.of("unshare", "--ipc", "--pid", "--mount", "--fork", "--kill-child", "--mount-proc",
                        "sh", "-c", "mount -t tmpfs -o size=1g tmpfs /dev/shm && exec \"$@\"", "sh"));
            } else { // the partner's IPC, PID and mount namespaces (its /dev/shm), our own network
                cmd.addAll(List.of("nsenter", "--target", Long.toString(partner.javaPid), "--ipc", "--pid",
                        "--mount", "--"));
            }
            cmd.addAll(java("node", "--control", "unix:" + socket, "--name", name, "--max-seconds", "1800"));
            Files.createDirectories(cluster.logDir);
            ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(cluster.logDir.resolve(name + ".log").toFile()));
            environment(pb);
            Files.deleteIfExists(socket);
            launcher = pb.start();
            runs++;
            javaPid = childOf(launcher.pid());
        }

        /** The JVM: the launcher's only child (unshare and nsenter fork it, then wait). */
        private static long childOf(long pid) throws Exception {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            Path children = Path.of("/proc", Long.toString(pid), "task", Long.toString(pid), "children");
            while (System.nanoTime() < deadline) {
                try {
                    String c = Files.readString(children).trim();
                    if (!c.isEmpty()) {
                        return Long.parseLong(c.split("\\s+")[0]);
                    }
                } catch (IOException gone) {
                    throw new IOException("node launcher " + pid + " exited before starting its JVM");
                }
                Thread.sleep(10);
            }
            throw new IOException("node launcher " + pid + " started no JVM within 30 s");
        }

        private void signal(String sig) throws Exception {
            run(true, "kill", "-" + sig, Long.toString(javaPid));
        }

        @Override
        public void kill() throws Exception {
            signal("KILL");
        }

        @Override
        public long pause() throws Exception {
            long at = System.currentTimeMillis();
            signal("STOP");
            return at;
        }

        @Override
        public void resume() throws Exception {
            signal("CONT");
        }

        private String hostEnd(int k) {
            return "nx" + cluster.tag + "h" + index + k;
        }

        @Override
        public void disconnect(int k) throws Exception {
            cluster.inNs(cluster.switchNs, "ip", "link", "set", hostEnd(k), "down");
        }

        @Override
        public void reconnect(int k) throws Exception {
            cluster.inNs(cluster.switchNs, "ip", "link", "set", hostEnd(k), "up");
            // The node's end gets its carrier back asynchronously (linkwatch, up to a second); until then a connect
            // fails with NoRouteToHostException. Docker's network connect returns with the interface up.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            String state = "";
            while (!state.equals("up")) {
                if (System.nanoTime() > deadline) {
                    throw new IOException(name + ": eth" + k + " not up 10 s after its link came back: " + state);
                }
                Thread.sleep(10);
                state = shell("cat /sys/class/net/eth" + k + "/operstate").trim();
            }
            // Neighbour entries still resolving from the cut (a lane's last retransmit, its FIN) would fail the next
            // connect once their probes, sent into the void, run out; Docker's new interface starts with none either.
            shell("ip neigh flush dev eth" + k);
        }

        @Override
        public String shell(String script) throws Exception {
            return runForOutput(true, "ip", "netns", "exec", ns, "sh", "-c", script).output();
        }

        @Override
        public String device(int k) {
            return "eth" + k;
        }

        @Override
        public void restart() throws Exception {
            detach();
            signal("TERM"); // the node's shutdown hook closes its worker: peers hear EP_REMOVED
            if (!launcher.waitFor(30, TimeUnit.SECONDS)) {
                signal("KILL");
                launcher.waitFor(10, TimeUnit.SECONDS);
            }
            launch(partner);
            attach();
        }

        @Override
        public String infoLanes(String peerAddress) throws Exception {
            List<String> cmd = new ArrayList<>(List.of("nsenter", "--target", Long.toString(javaPid), "--net",
                    "--ipc", "--pid", "--mount", "--"));
            cmd.addAll(java("info", "--lanes", peerAddress));
            ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
            environment(pb);
            Process p = pb.start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
                p.destroyForcibly();
                throw new IOException(name + ": nucx info --lanes failed: " + out);
            }
            return out;
        }

        void stopProcess() {
            detach();
            if (launcher == null) {
                return;
            }
            try {
                if (ProcessHandle.of(javaPid).map(ProcessHandle::isAlive).orElse(false)) {
                    run(false, "kill", "-CONT", Long.toString(javaPid)); // a paused one cannot die
                    run(false, "kill", "-KILL", Long.toString(javaPid));
                }
            } catch (Exception e) {
                System.err.println("cluster: " + name + " not killed: " + e);
            }
            launcher.destroyForcibly();
            try {
                launcher.waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
