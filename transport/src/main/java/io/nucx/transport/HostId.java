package io.nucx.transport;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.UUID;

/**
 * The identity of this host as UCX computes it for shared-memory reachability (src/ucs/sys/uid.c): the boot id
 * folded to 64 bits, mixed with the network namespace inode so that two namespaces on one kernel differ.
 */
public final class HostId {

    private static final long VALUE = compute();

    private HostId() {
    }

    /** This host's id. */
    public static long get() {
        return VALUE;
    }

    private static long compute() {
        long boot;
        try {
            UUID id = UUID.fromString(Files.readString(Path.of("/proc/sys/kernel/random/boot_id")).trim());
            boot = id.getMostSignificantBits() ^ id.getLeastSignificantBits();
        } catch (IOException | IllegalArgumentException e) {
            // No boot id (not Linux): fall back to the host name, still stable for the life of the host.
            boot = hostName().hashCode() * 0x9E3779B97F4A7C15L;
        }
        return boot ^ (namespaceInode() * 0xC2B2AE3D27D4EB4FL);
    }

    private static long namespaceInode() {
        try {
            String link = Files.readSymbolicLink(Path.of("/proc/self/ns/net")).toString(); // "net:[4026531840]"
            int open = link.indexOf('[');
            return Long.parseLong(link.substring(open + 1, link.length() - 1));
        } catch (IOException | RuntimeException e) {
            return 0;
        }
    }

    private static String hostName() {
        try {
            return java.net.InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            return "localhost";
        }
    }
}
