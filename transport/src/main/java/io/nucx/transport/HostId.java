package io.nucx.transport;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.UUID;

/**
 * The identity of this host as UCX computes it for reachability (src/ucs/sys/uid.c): the boot id folded to 64 bits,
 * mixed with the inodes of the namespaces that decide what a peer can reach.
 * <ul>
 *   <li>{@link #get()}, for shared memory and process access (shm, cma): the IPC and PID namespaces. Shared memory
 *       needs the same IPC namespace, as in UCX's sm ifaces (containers started with {@code --ipc container:X} share
 *       {@code /dev/shm}); process_vm_readv/writev and shm's pid-named files need the same PID namespace (UCX's cma
 *       compares it too). The network namespace does not matter: two containers sharing IPC and PID namespaces but
 *       not the network reach each other by shm and cma.</li>
 *   <li>{@link #network()}, for loopback TCP: the network namespace, so a loopback address reaches only its own
 *       namespace.</li>
 * </ul>
 */
public final class HostId {

    private static final long BOOT = boot();
    private static final long MEMORY = BOOT ^ (namespaceInode("ipc") * 0xC2B2AE3D27D4EB4FL)
            ^ (namespaceInode("pid") * 0x165667B19E3779F9L);
    private static final long NETWORK = BOOT ^ (namespaceInode("net") * 0xC2B2AE3D27D4EB4FL);

    private HostId() {
    }

    /** This host's id for shared memory and process access: boot id, IPC and PID namespaces. */
    public static long get() {
        return MEMORY;
    }

    /** This host's id for loopback networking: boot id and network namespace. */
    public static long network() {
        return NETWORK;
    }

    private static long boot() {
        try {
            UUID id = UUID.fromString(Files.readString(Path.of("/proc/sys/kernel/random/boot_id")).trim());
            return id.getMostSignificantBits() ^ id.getLeastSignificantBits();
        } catch (IOException | IllegalArgumentException e) {
            // No boot id (not Linux): fall back to the host name, still stable for the life of the host.
            return hostName().hashCode() * 0x9E3779B97F4A7C15L;
        }
    }

    private static long namespaceInode(String kind) {
        try {
            String link = Files.readSymbolicLink(Path.of("/proc/self/ns/" + kind)).toString(); // "net:[4026531840]"
            int open = link.indexOf('[');
            return Long.parseLong(link.substring(open + 1, link.length() - 1));
        } catch (IOException | RuntimeException e) {
            return 0;
        }
    }

    private static String hostName() {
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            return "localhost";
        }
    }
}
