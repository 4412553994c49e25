package io.nucx.transport.rdma;

import io.nucx.transport.Availability;
import io.nucx.transport.Device;
import io.nucx.transport.NucxConfig;
import org.junit.jupiter.api.Assumptions;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The verbs emulator the test build compiled (src/test/c/verbs-emu) into {@code target/verbs-emu}: its path, why it
 * is missing, and its counters (what the emulated devices of this process did). Public for the rdma tests of the
 * modules above (they find it through the system property {@code verbs.emu.dir}, which the parent pom sets).
 */
public final class VerbsEmulator {

    /** Counter indexes of verbs_emu_counters(). */
    public static final int REQ_SENT = 0;
    public static final int RNR_NAK_SENT = 2;
    public static final int RNR_NAK_RECEIVED = 3;
    public static final int DEV0_BYTES = 6;
    public static final int DEV1_BYTES = 7;

    private VerbsEmulator() {
    }

    public static Path dir() {
        return Path.of(System.getProperty("verbs.emu.dir", "target/verbs-emu")).toAbsolutePath();
    }

    /** The emulator library's path. */
    public static String library() {
        return dir().resolve("libibverbs.so.1").toString();
    }

    /**
     * The library the lane tests run on: the emulator, or what {@code -Drdma.test.lib} names (on a machine with an
     * RDMA device: {@code -Drdma.test.lib=libibverbs.so.1}).
     */
    public static String testLibrary() {
        return System.getProperty("rdma.test.lib", library());
    }

    /** Whether the lane tests run on the emulator (whose counters they may read). */
    public static boolean testsOnEmulator() {
        return testLibrary().equals(library());
    }

    /** Why the lane tests cannot run, or null. */
    public static String testsMissing() {
        if (!testsOnEmulator()) {
            Availability a = new RdmaTransport(testLibrary()).availability();
            return a.isAvailable() ? null : a.reason();
        }
        return missing();
    }

    /**
     * Device {@code i} of the test library (wrapping around when it has fewer: one device serves both sides). A test
     * that asks when the lane tests cannot run is skipped, saying why (it had failed dividing by no devices).
     */
    public static String device(int i) {
        String missing = testsMissing();
        if (missing != null) {
            Assumptions.abort(missing);
        }
        List<Device> ds = new RdmaTransport(testLibrary()).devices(NucxConfig.of(Map.of(), Map.of()));
        return ds.get(i % ds.size()).name();
    }

    /** Why there is no emulator (no gcc, no headers, not built), or null. */
    public static String missing() {
        Path why = dir().resolve("UNAVAILABLE");
        try {
            if (Files.exists(why)) {
                return "verbs emulator not built: " + Files.readString(why).trim();
            }
        } catch (IOException e) {
            return "verbs emulator: " + e;
        }
        return Files.exists(Path.of(library())) ? null : "verbs emulator not built (" + library() + " missing; the "
                + "test build makes it in process-test-classes)";
    }

    /** Why the rdma-core headers cannot be compiled against, or null. */
    static String headersMissing() {
        Path why = dir().resolve("UNAVAILABLE");
        try {
            return Files.exists(why) ? Files.readString(why).trim() : null;
        } catch (IOException e) {
            return e.toString();
        }
    }

    /** This process's emulator counters. */
    public static long[] counters() {
        MethodHandle h = Linker.nativeLinker().downcallHandle(
                SymbolLookup.libraryLookup(Path.of(library()), Arena.global()).find("verbs_emu_counters").orElseThrow(),
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(JAVA_LONG, 16);
            int n = (int) h.invokeExact(out, 16);
            return out.asSlice(0, 8L * Math.min(n, 16)).toArray(JAVA_LONG);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }
}
