package io.nucx.examples.bench;

import io.nucx.transport.Buffers;
import io.nucx.transport.HostId;
import io.nucx.transport.cma.Cma;
import io.nucx.transport.cma.CmaException;
import io.nucx.transport.cma.CmaKey;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.concurrent.TimeUnit;

/**
 * One large copy in cache at a given distance of its destination past its source modulo a page: nucx's
 * ({@link Buffers#copyMemory}) against libc's memmove called straight. At 1-15 bytes this machine's {@code rep movsb}
 * runs at a fifteenth of its rate, and nucx's copy goes around it; the kernel's copy ({@link #kernelRead}) has the same
 * flaw. Run: {@code bin/nucx-jmh CopyDistance}
 * (BENCHMARKS.md); the score is nanoseconds a copy, so {@code size / score} is GB/s.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class CopyDistanceBenchmark {

    private static final MethodHandle MEMMOVE = Linker.nativeLinker().downcallHandle(
            Linker.nativeLinker().defaultLookup().find("memmove").orElseThrow(),
            FunctionDescriptor.ofVoid(ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG),
            Linker.Option.critical(false));

    /** {@code ssize_t process_vm_readv(pid_t, const struct iovec *, unsigned long, const struct iovec *, ...)}. */
    private static final MethodHandle PROCESS_VM_READV = Linker.nativeLinker().downcallHandle(
            Linker.nativeLinker().defaultLookup().find("process_vm_readv").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT, ValueLayout.ADDRESS,
                    ValueLayout.JAVA_LONG, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG));

    /** Bytes the destination lies past the source, modulo 4096. */
    @Param({"0", "8", "24", "64"})
    int distance;

    @Param({"4096", "65536"})
    int size;

    private Arena arena;
    private long src;
    private long dst;
    private int pid;
    private MemorySegment local;
    private MemorySegment remote;
    private Cma cma;
    private CmaKey key;
    private MemorySegment dstSegment;

    @Setup(Level.Trial)
    public void setUp() throws Throwable {
        arena = Arena.ofShared();
        // Both page-aligned plus 64: the distance modulo a page is the parameter's.
        src = arena.allocate(size + 8192L, 4096).address() + 64;
        dst = arena.allocate(size + 8192L, 4096).address() + 64 + distance;
        pid = (int) ProcessHandle.current().pid();
        local = iovec(dst);
        remote = iovec(src);
        if (kernelRead() != size) { // not timing a failing call (no permission: seccomp, Yama)
            throw new IllegalStateException("process_vm_readv of this process did not read " + size + " bytes");
        }
        cma = new Cma();
        key = new CmaKey(HostId.get(), pid, src, size);
        dstSegment = MemorySegment.ofAddress(dst).reinterpret(size);
    }

    /** One {@code struct iovec}: {@code size} bytes at {@code address}. */
    private MemorySegment iovec(long address) {
        MemorySegment iov = arena.allocate(16, 8);
        iov.set(ValueLayout.JAVA_LONG, 0, address);
        iov.set(ValueLayout.JAVA_LONG, 8, size);
        return iov;
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        cma.close();
        arena.close();
    }

    @Benchmark
    public void nucx() {
        Buffers.copyMemory(src, dst, size);
    }

    @Benchmark
    public void libcMemmove() throws Throwable {
        MEMMOVE.invokeExact(dst, src, (long) size);
    }

    /**
     * The kernel's copy, as cma's read makes it (here from this process itself): its user copies take {@code rep
     * movsb} too, and nucx does not choose the two addresses of a rendezvous read.
     */
    @Benchmark
    public long kernelRead() throws Throwable {
        return (long) PROCESS_VM_READV.invokeExact(pid, local, 1L, remote, 1L, 0L);
    }

    /** nucx's cma read of the same bytes ({@link Cma#get}): at distances 1-15 through its bounce buffer. */
    @Benchmark
    public void cmaGet() throws CmaException {
        cma.get(key, 0, dstSegment);
    }
}
