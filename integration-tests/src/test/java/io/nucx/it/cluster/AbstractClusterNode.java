package io.nucx.it.cluster;

import java.nio.file.Path;
import java.time.Duration;

/**
 * What a node keeps whatever its backend: its name, and the control channel and worker address of its current
 * process, found again after each start by {@link #attach}.
 */
abstract class AbstractClusterNode implements ClusterNode {

    /** How long a node's process may take to open its control socket. */
    static final Duration START = Duration.ofSeconds(90);

    protected final String name;
    /** Where the node's process opens its control socket, as this JVM sees it. */
    protected final Path socket;
    private NodeClient control;
    private String address;

    AbstractClusterNode(String name, Path socket) {
        this.name = name;
        this.socket = socket;
    }

    /** Connects to the control socket of the node's current process and asks its worker address. */
    void attach() throws Exception {
        control = NodeClient.connect(name, socket, START);
        address = control.call("address");
    }

    /** Closes the control channel of the node's current process, if it was attached. */
    void detach() {
        if (control != null) {
            control.close();
        }
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public NodeClient control() {
        return control;
    }

    @Override
    public String address() {
        return address;
    }
}
