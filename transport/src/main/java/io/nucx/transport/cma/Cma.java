package io.nucx.transport.cma;

import io.nucx.transport.Availability;
import io.nucx.transport.Buffers;
import io.nucx.transport.HostId;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Objects;

/**
 * Zero-copy GET and PUT between processes on one host with {@code process_vm_readv} / {@code process_vm_writev}
 * (UCX's {@code uct/sm/scopy/cma}). One instance per thread (event loop): it owns the iovec and errno scratch memory.
 *
 * <table>
 *   <caption>operation → system call</caption>
 *   <tr><th>GET (read the peer's memory into ours)</th><td>process_vm_readv</td></tr>
 *   <tr><th>PUT (write our memory into the peer's)</th><td>process_vm_writev</td></tr>
 * </table>
 * Transfers go in chunks of at most {@link #CHUNK} bytes, as UCX's scopy does, so one call never copies for long;
 * a short transfer continues where it stopped. Where the destination lies 1-15 bytes past the source modulo a page,
 * the chunks go through a bounce buffer at the peer's place in a page (the kernel's copy is slow at those distances).
 */
public final class Cma implements AutoCloseable {

    /** UCX scopy's segment size. */
    public static final long CHUNK = 512 * 1024;
    /**
     * Bytes a lane moves (in {@link #CHUNK}s) before it gives its event loop back for a turn of I/O and timers: a
     * quarter to a millisecond of copying here. Four calls a turn, not one: a turn after every call cost a 1 MiB GET
     * 6 % of its rate in tag_bw; with four it is within 3 % of no turns at 1, 4 and 64 MiB.
     */
    public static final long TURN_BYTES = 4 * CHUNK;
    /**
     * Page-aliased transfers from this size go through a bounce buffer: 64 KiB moved by the kernel took 27 us at
     * distance 8 against 6 at 0 (BENCHMARKS.md), where the bounce's copy costs about 1.2.
     */
    static final long BOUNCE_FROM = 4096;
    private static final long PAGE = 4096;
    /**
     * Each thread's bounce buffer, {@link #CHUNK} bytes and a page, made at its first page-aliased transfer and freed
     * with the thread: one per loop, not per lane (a loop may carry many endpoints).
     */
    private static final ThreadLocal<MemorySegment> BOUNCE = ThreadLocal.withInitial(
            () -> Arena.ofAuto().allocate(CHUNK + PAGE, PAGE));

    private static final int PID = pid0();
    private static final Availability AVAILABILITY = probe();

    private final Arena arena = Arena.ofConfined();
    private final MemorySegment local = arena.allocate(CmaNative.IOVEC);
    private final MemorySegment remote = arena.allocate(CmaNative.IOVEC);
    private final MemorySegment capture = CmaNative.newCaptureState(arena);
    private long bounced;

    /** Whether cross-memory attach works here, or why not (bindings, kernel, Yama ptrace_scope, seccomp). */
    public static Availability availability() {
        return AVAILABILITY;
    }

    /**
     * Who may be read from here, for {@code nucx info}: the pid, Yama's ptrace_scope and whether this process has
     * CAP_SYS_PTRACE (then the kernel refuses nothing); without it, peers of another user or non-dumpable peers are
     * refused with EPERM when lanes are selected.
     */
    public static String accessSummary() {
        String scope;
        try {
            scope = "Yama ptrace_scope " + Files.readString(Path.of("/proc/sys/kernel/yama/ptrace_scope")).trim();
        } catch (IOException e) {
            scope = "no Yama (classic ptrace rules)";
        }
        boolean ptrace = false;
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("CapEff:")) {
                    ptrace = (Long.parseUnsignedLong(line.substring(7).trim(), 16) & (1L << 19)) != 0;
                }
            }
        } catch (IOException | NumberFormatException e) {
            // unknown: say no, the conservative answer
        }
        return "pid " + PID + ", " + scope + (ptrace ? ", CAP_SYS_PTRACE: may read any local process"
                : ", no CAP_SYS_PTRACE: peers of another user or non-dumpable are refused (EPERM)");
    }

    /** This process's pid. */
    public static int pid() {
        return PID;
    }

    private static int pid0() {
        return (int) ProcessHandle.current().pid();
    }

    private static Availability probe() {
        if (CmaNative.UNAVAILABILITY != null) {
            return Availability.unavailable("cma: " + CmaNative.UNAVAILABILITY);
        }
        try {
            String scope = Files.readString(Path.of("/proc/sys/kernel/yama/ptrace_scope")).trim();
            if (scope.equals("2") || scope.equals("3")) {
                return Availability.unavailable("cma: Yama ptrace_scope is " + scope
                        + " (only CAP_SYS_PTRACE, or nobody, may attach)");
            }
        } catch (IOException e) {
            // no Yama: classic ptrace permissions apply
        }
        // Self-test, as UCX does: write 8 bytes into our own memory through the kernel.
        try (Cma cma = new Cma(); Arena a = Arena.ofConfined()) {
            MemorySegment src = a.allocate(8).fill((byte) 7);
            MemorySegment dst = a.allocate(8);
            cma.put(new CmaKey(HostId.get(), PID, dst.address(), 8), 0, src);
            if (dst.get(ValueLayout.JAVA_BYTE, 7) != 7) {
                return Availability.unavailable("cma: self-test wrote nothing");
            }
            return Availability.available();
        } catch (CmaException e) {
            return Availability.unavailable("cma: self-test failed: " + e.getMessage());
        }
    }

    /** Reads {@code dst.byteSize()} bytes at {@code key.address + offset} of the peer into {@code dst}. */
    public void get(CmaKey key, long offset, MemorySegment dst) throws CmaException {
        transfer(CmaNative.READV, "process_vm_readv", key, offset, dst, 0, dst.byteSize());
    }

    /** Reads {@code length} bytes at {@code key.address + offset} of the peer into {@code dst} at {@code at}. */
    public void get(CmaKey key, long offset, MemorySegment dst, long at, long length) throws CmaException {
        transfer(CmaNative.READV, "process_vm_readv", key, offset, dst, at, length);
    }

    /** Writes {@code src} to {@code key.address + offset} of the peer. */
    public void put(CmaKey key, long offset, MemorySegment src) throws CmaException {
        transfer(CmaNative.WRITEV, "process_vm_writev", key, offset, src, 0, src.byteSize());
    }

    /** Writes {@code length} bytes of {@code src} from {@code at} to {@code key.address + offset} of the peer. */
    public void put(CmaKey key, long offset, MemorySegment src, long at, long length) throws CmaException {
        transfer(CmaNative.WRITEV, "process_vm_writev", key, offset, src, at, length);
    }

    /**
     * Moves bytes {@code [at, at + n)} of {@code segment}, a native segment of ours, to or from the peer. The iovecs
     * take plain addresses: no segment is made per call or per chunk.
     */
    private void transfer(MethodHandle call, String name, CmaKey key, long offset,
                          MemorySegment segment, long at, long n) throws CmaException {
        Objects.checkFromIndexSize(at, n, segment.byteSize());
        if (!segment.isNative()) {
            throw new IllegalArgumentException(name + ": a heap segment has no address for the kernel");
        }
        if (!segment.scope().isAlive()) { // its arena closed: its address may be anyone's memory now
            throw new IllegalStateException(name + ": the local segment's arena is closed");
        }
        long mine = segment.address() + at;
        if (offset < 0 || offset + n > key.length()) {
            throw new CmaException(name + ": [" + offset + ", +" + n + ") lies outside the peer's " + key.length()
                    + "-byte region", 22);
        }
        if (key.hostId() != HostId.get()) {
            throw new CmaException(name + ": the region belongs to another host (host id "
                    + Long.toHexString(key.hostId()) + ")", 22);
        }
        boolean read = call == CmaNative.READV;
        long theirs = key.address() + offset;
        // The kernel copies with rep movsb, at a quarter of its rate here where the destination lies 1-15 bytes
        // past the source modulo a page (Buffers.pageAliased): such a transfer goes through a bounce at the peer's
        // place in a page, and the copy between it and ours is one that goes around the flaw.
        boolean bounce = n >= BOUNCE_FROM && (read ? Buffers.pageAliased(theirs, mine)
                : Buffers.pageAliased(mine, theirs));
        long done = 0;
        while (done < n) {
            long len = Math.min(CHUNK, n - done);
            long remoteAddress = theirs + done;
            long through = bounce ? bounceAt(remoteAddress) : mine + done; // ours is valid: checked alive above
            if (bounce && !read) {
                Buffers.copyMemory(mine + done, through, len);
            }
            local.set(ValueLayout.JAVA_LONG, CmaNative.IOV_BASE, through);
            local.set(ValueLayout.JAVA_LONG, CmaNative.IOV_LEN, len);
            remote.set(ValueLayout.JAVA_LONG, CmaNative.IOV_BASE, remoteAddress);
            remote.set(ValueLayout.JAVA_LONG, CmaNative.IOV_LEN, len);
            long r;
            try {
                r = (long) call.invokeExact(capture, key.pid(), local, 1L, remote, 1L, 0L);
            } catch (Throwable t) {
                throw new IllegalStateException(name + " downcall failed", t);
            }
            if (r < 0) {
                int errno = CmaNative.errno(capture);
                throw new CmaException(name + "(pid " + key.pid() + ", local 0x" + Long.toHexString(mine + done)
                        + "+" + len + ", remote 0x" + Long.toHexString(remoteAddress) + "+" + len + "): "
                        + CmaNative.errnoName(errno), errno);
            }
            if (r == 0) {
                throw new CmaException(name + "(pid " + key.pid() + "): transferred nothing at remote 0x"
                        + Long.toHexString(remoteAddress), 0);
            }
            if (bounce && read) {
                Buffers.copyMemory(through, mine + done, r);
            }
            done += r;
        }
        if (bounce) {
            bounced++;
        }
    }

    /**
     * An address in the calling thread's bounce buffer at {@code remote}'s place in a page, so that the kernel copies
     * between two addresses at distance 0. Asked per transfer, not kept: an instance is confined to one thread, but
     * the buffer must be the caller's whatever happens.
     */
    static long bounceAt(long remote) {
        return BOUNCE.get().address() + (remote & (PAGE - 1));
    }

    /** Transfers that went through the bounce buffer (page-aliased addresses), for tests and diagnostics. */
    long bounced() {
        return bounced;
    }

    /**
     * Whether this process may read {@code pid}'s memory, as UCX checks at wireup: read 16 bytes from address 0. The
     * kernel checks permission before the address, so EFAULT means "allowed", EPERM "refused".
     */
    public boolean mayAccess(int pid) throws CmaException {
        local.set(ValueLayout.ADDRESS, CmaNative.IOV_BASE, MemorySegment.NULL);
        local.set(ValueLayout.JAVA_LONG, CmaNative.IOV_LEN, 16L);
        remote.set(ValueLayout.ADDRESS, CmaNative.IOV_BASE, MemorySegment.NULL);
        remote.set(ValueLayout.JAVA_LONG, CmaNative.IOV_LEN, 16L);
        long r;
        try {
            r = (long) CmaNative.READV.invokeExact(capture, pid, local, 1L, remote, 1L, 0L);
        } catch (Throwable t) {
            throw new IllegalStateException("process_vm_readv downcall failed", t);
        }
        int errno = r < 0 ? CmaNative.errno(capture) : 0;
        if (r >= 0 || errno == CmaNative.EFAULT) {
            return true;
        }
        if (errno == CmaNative.EPERM) {
            return false;
        }
        throw new CmaException("process_vm_readv(pid " + pid + ") permission probe: " + CmaNative.errnoName(errno),
                errno);
    }

    @Override
    public void close() {
        arena.close();
    }
}
