package io.nucx.transport.shm;

import io.netty.util.internal.logging.InternalLogger;
import io.netty.util.internal.logging.InternalLoggerFactory;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Names of the files the shm transport makes under {@code /dev/shm}, each carrying its creator's pid so a later
 * process can tell a dead one's files from a live one's: {@code nucx-<pid>-<iface>.sock} (the iface's setup socket)
 * and {@code nucx-<pid>-<iface>-<n>.ring} (a ring, deleted as soon as the peer has mapped it).
 */
public final class ShmFiles {

    private static final InternalLogger LOG = InternalLoggerFactory.getInstance(ShmFiles.class);
    /** Where rings and sockets live: a tmpfs every process of the host (and namespace) shares. */
    public static final Path DIR = Path.of("/dev/shm");
    private static final Pattern NAME = Pattern.compile("nucx-(\\d+)-(\\d+)(?:-(\\d+))?\\.(sock|ring)");
    private static final AtomicLong NEXT_RING = new AtomicLong();

    private ShmFiles() {
    }

    public static long pid() {
        return ProcessHandle.current().pid();
    }

    static Path socket(Path dir, long pid, long ifaceId) {
        return dir.resolve("nucx-" + pid + "-" + ifaceId + ".sock");
    }

    static Path newRing(Path dir, long ifaceId) {
        return dir.resolve("nucx-" + pid() + "-" + ifaceId + "-" + NEXT_RING.incrementAndGet() + ".ring");
    }

    /** Whether {@code file} is a ring file name of process {@code pid} directly under {@code dir}. */
    static boolean isRingOf(Path dir, Path file, long pid) {
        if (!dir.equals(file.getParent())) {
            return false;
        }
        Matcher m = NAME.matcher(file.getFileName().toString());
        return m.matches() && m.group(3) != null && m.group(4).equals("ring") && Long.parseLong(m.group(1)) == pid;
    }

    /**
     * Deletes the rings and sockets of processes that no longer exist (killed before they could clean up);
     * returns how many. Files of live processes, and files that are not ours, are left alone.
     */
    public static int reapStale(Path dir) {
        return reap(dir, "nucx-*");
    }

    /** Deletes the files of process {@code pid} if it no longer exists; returns how many. */
    public static int reapIfDead(Path dir, long pid) {
        return ProcessHandle.of(pid).isPresent() ? 0 : reap(dir, "nucx-" + pid + "-*");
    }

    private static int reap(Path dir, String glob) {
        int reaped = 0;
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, glob)) {
            for (Path f : files) {
                Matcher m = NAME.matcher(f.getFileName().toString());
                if (!m.matches()) {
                    continue;
                }
                long pid = Long.parseLong(m.group(1));
                if (ProcessHandle.of(pid).isEmpty()) {
                    try {
                        if (Files.deleteIfExists(f)) {
                            reaped++;
                            LOG.debug("reaped {} of dead process {}", f, pid);
                        }
                    } catch (IOException e) {
                        LOG.debug("cannot reap {}: {}", f, e.toString());
                    }
                }
            }
        } catch (IOException e) {
            LOG.debug("cannot list {} to reap stale files: {}", dir, e.toString());
        }
        return reaped;
    }
}
