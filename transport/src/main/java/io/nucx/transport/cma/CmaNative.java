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

/**
 * FFM bindings for cross-memory attach, probed once. Never {@code critical}: a copy of many megabytes must not hold
 * the thread in Java state (safepoints would wait for it).
 *
 * <pre>
 * ssize_t process_vm_readv(pid_t pid, const struct iovec *local_iov, unsigned long liovcnt,
 *                          const struct iovec *remote_iov, unsigned long riovcnt, unsigned long flags);
 * ssize_t process_vm_writev(... same ...);
 * struct iovec { void *iov_base; size_t iov_len; };   // 16 bytes on x86_64
 * </pre>
 */
final class CmaNative {

    /** {@code struct iovec}. */
    static final StructLayout IOVEC = MemoryLayout.structLayout(ADDRESS.withName("iov_base"),
            JAVA_LONG.withName("iov_len"));
    static final long IOV_BASE = IOVEC.byteOffset(MemoryLayout.PathElement.groupElement("iov_base"));
    static final long IOV_LEN = IOVEC.byteOffset(MemoryLayout.PathElement.groupElement("iov_len"));

    static final int EPERM = 1;
    static final int ESRCH = 3;
    static final int EFAULT = 14;

    private static final StructLayout CAPTURE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE.varHandle(MemoryLayout.PathElement.groupElement("errno"));

    static final MethodHandle READV;
    static final MethodHandle WRITEV;
    static final MethodHandle GETPID;
    /** Why the bindings are missing, or null. */
    static final Throwable UNAVAILABILITY;

    static {
        MethodHandle r = null;
        MethodHandle w = null;
        MethodHandle p = null;
        Throwable cause = null;
        try {
            Linker linker = Linker.nativeLinker();
            SymbolLookup libc = linker.defaultLookup();
            FunctionDescriptor fd = FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG,
                    JAVA_LONG);
            Linker.Option errno = Linker.Option.captureCallState("errno");
            r = linker.downcallHandle(libc.find("process_vm_readv").orElseThrow(
                    () -> new UnsatisfiedLinkError("process_vm_readv not found in the C library")), fd, errno);
            w = linker.downcallHandle(libc.find("process_vm_writev").orElseThrow(
                    () -> new UnsatisfiedLinkError("process_vm_writev not found in the C library")), fd, errno);
            p = linker.downcallHandle(libc.find("getpid").orElseThrow(), FunctionDescriptor.of(JAVA_INT));
        } catch (Throwable t) {
            cause = t;
        }
        READV = r;
        WRITEV = w;
        GETPID = p;
        UNAVAILABILITY = cause;
    }

    private CmaNative() {
    }

    /** A capture segment for errno, one per calling thread. */
    static MemorySegment newCaptureState(Arena arena) {
        return arena.allocate(CAPTURE);
    }

    static int errno(MemorySegment capture) {
        return (int) ERRNO.get(capture, 0L);
    }

    static String errnoName(int errno) {
        return switch (errno) {
            case EPERM -> "EPERM (not permitted: other user, non-dumpable peer, Yama ptrace_scope or seccomp)";
            case ESRCH -> "ESRCH (no such process)";
            case EFAULT -> "EFAULT (address range not mapped in one of the processes)";
            case 12 -> "ENOMEM";
            case 22 -> "EINVAL";
            case 38 -> "ENOSYS (the kernel has no cross-memory attach)";
            default -> "errno " + errno;
        };
    }
}
