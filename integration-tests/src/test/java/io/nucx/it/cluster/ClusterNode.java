package io.nucx.it.cluster;

/**
 * One node of a test cluster: a {@code nucx node} process on a host of its own (a container, or a set of namespaces),
 * its control channel, and the faults the test may inject into it. Each fault names only this node's own host.
 */
interface ClusterNode {

    /** The node's name, also its worker's name and the name peers know it by. */
    String name();

    /** The control channel of the node's current process. */
    NodeClient control();

    /** The worker address of the node's current process, hex. */
    String address();

    /** SIGKILL the node's process (docker kill): its sockets close, nothing is said. */
    void kill() throws Exception;

    /**
     * Freezes the node (docker pause / SIGSTOP): sockets stay open, nothing is answered. Returns the time
     * ({@link System#currentTimeMillis()}) the freeze that took began: the fault's moment.
     */
    long pause() throws Exception;

    /** Undoes {@link #pause()}. */
    void resume() throws Exception;

    /** Takes the node off network {@code index} (docker network disconnect / its link down): packets vanish. */
    void disconnect(int index) throws Exception;

    /** Puts the node back on network {@code index} with the same address. */
    void reconnect(int index) throws Exception;

    /** Runs a shell script in the node's network namespace (see {@link LinkFaults}); returns its output. */
    String shell(String script) throws Exception;

    /** The node's interface on network {@code index}. */
    String device(int index) throws Exception;

    /** Stops the node gracefully (SIGTERM: its worker closes, peers hear EP_REMOVED) and starts a new process. */
    void restart() throws Exception;

    /** Output of {@code nucx info --lanes ADDRESS} run on the node's host (its namespaces, its environment). */
    String infoLanes(String peerAddress) throws Exception;
}
