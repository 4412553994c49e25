package io.nucx.transport.cma;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * Tells whether one process of this host has exited, without being its parent: a pidfd ({@code pidfd_open}, Linux
 * 5.3+) polled for readability, which the kernel signals once every thread of the process has exited (a zombie
 * counts as exited: its memory is gone). A pidfd names one process, not a number, so a pid reused by a later process
 * cannot make it look alive or dead.
 *
 * <p>Where pidfds are missing it falls back to {@code kill(pid, 0)} answering ESRCH. That is conservative: a zombie
 * and a reused pid both look alive, so a caller waiting for the exit waits longer, never shorter.
 *
 * <p>Used by {@link PeerExit}: a cma registration is revoked only once the peer's process has exited, since before that
 * nothing stops it writing into the memory. Not thread-safe; one owner.
 */
public final class ProcessExitWatch implements AutoCloseable {

    private static final int ESRCH = 3;
    private static final short POLLIN = 1;
    /** pidfd_open's number on x86_64 and in the generic table (arm64, riscv), for C libraries without a wrapper. */
    private static final long SYS_PIDFD_OPEN = 434;

    private static final StructLayout CAPTURE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    /** {@code struct pollfd { int fd; short events; short revents; }}. */
    private static final StructLayout POLLFD = MemoryLayout.structLayout(JAVA_INT.withName("fd"),
            JAVA_SHORT.withName("events"), JAVA_SHORT.withName("revents"));

    /** {@code int pidfd_open(pid_t, unsigned)} from the C library, or null. */
    private static final MethodHandle PIDFD_OPEN;
    /** {@code long syscall(long, ...)} called as syscall(SYS_pidfd_open, pid, flags), or null. */
    private static final MethodHandle SYSCALL;
    private static final MethodHandle POLL;
    private static final MethodHandle KILL;
    private static final MethodHandle CLOSE;

    static {
        Linker linker = Linker.nativeLinker();
        SymbolLookup libc = linker.defaultLookup();
        Linker.Option errno = Linker.Option.captureCallState("errno");
        PIDFD_OPEN = libc.find("pidfd_open").map(s -> linker.downcallHandle(s,
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT), errno)).orElse(null);
        SYSCALL = libc.find("syscall").map(s -> linker.downcallHandle(s,
                FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG), errno,
                Linker.Option.firstVariadicArg(1))).orElse(null);
        POLL = linker.downcallHandle(libc.find("poll").orElseThrow(),
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT), errno);
        KILL = linker.downcallHandle(libc.find("kill").orElseThrow(),
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT), errno);
        CLOSE = linker.downcallHandle(libc.find("close").orElseThrow(), FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    }

    private final int pid;
    /** The pidfd, or -1 when watching by kill(pid, 0). */
    private final int pidfd;
    private boolean exited;
    private boolean closed;

    private ProcessExitWatch(int pid, int pidfd) {
        this.pid = pid;
        this.pidfd = pidfd;
    }

    /**
     * Starts watching {@code pid}; null when no such process exists (it has already exited and been reaped). Opens a
     * pidfd if it can, else watches by kill(pid, 0).
     */
    public static ProcessExitWatch open(int pid) {
        return open(pid, true);
    }

    /** {@link #open(int)}, or with {@code usePidfd} false always the kill(pid, 0) fallback (tests). */
    static ProcessExitWatch open(int pid, boolean usePidfd) {
        if (pid <= 0) {
            throw new IllegalArgumentException("not a process id: " + pid);
        }
        if (usePidfd && (PIDFD_OPEN != null || SYSCALL != null)) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment capture = arena.allocate(CAPTURE);
                long fd;
                if (PIDFD_OPEN != null) {
                    fd = (int) PIDFD_OPEN.invokeExact(capture, pid, 0);
                } else {
                    fd = (long) SYSCALL.invokeExact(capture, SYS_PIDFD_OPEN, (long) pid, 0L);
                }
                if (fd >= 0) {
                    return new ProcessExitWatch(pid, (int) fd);
                }
                if ((int) ERRNO.get(capture, 0L) == ESRCH) {
                    return null;
                }
                // ENOSYS (kernel before 5.3), EMFILE, seccomp: the conservative fallback below
            } catch (Throwable t) {
                throw new IllegalStateException("pidfd_open downcall failed", t);
            }
        }
        ProcessExitWatch w = new ProcessExitWatch(pid, -1);
        return w.hasExited() ? null : w;
    }

    /** The watched process. */
    public int pid() {
        return pid;
    }

    /** Whether the watch uses a pidfd (exact), not kill(pid, 0) (conservative). */
    public boolean exact() {
        return pidfd >= 0;
    }

    /** Whether the process has exited; once true, stays true. Costs one system call while it has not. */
    public boolean hasExited() {
        if (exited) {
            return true;
        }
        if (closed) {
            throw new IllegalStateException("watch of pid " + pid + " is closed");
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment capture = arena.allocate(CAPTURE);
            if (pidfd >= 0) {
                MemorySegment fds = arena.allocate(POLLFD);
                fds.set(JAVA_INT, 0, pidfd);
                fds.set(JAVA_SHORT, 4, POLLIN);
                int n = (int) POLL.invokeExact(capture, fds, 1L, 0);
                // Readable once the process has exited; newer kernels add POLLHUP when it is reaped.
                exited = n > 0 && fds.get(JAVA_SHORT, 6) != 0;
            } else {
                int r = (int) KILL.invokeExact(capture, pid, 0);
                exited = r != 0 && (int) ERRNO.get(capture, 0L) == ESRCH;
            }
        } catch (Throwable t) {
            throw new IllegalStateException("process exit check downcall failed", t);
        }
        return exited;
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (pidfd >= 0) {
            try {
                int ignored = (int) CLOSE.invokeExact(pidfd);
            } catch (Throwable t) {
                throw new IllegalStateException("close downcall failed", t);
            }
        }
    }

    @Override
    public String toString() {
        return "pid " + pid + (pidfd >= 0 ? " by pidfd" : " by kill(pid, 0)") + (exited ? ", exited" : "")
                + (closed ? ", closed" : "");
    }
}
