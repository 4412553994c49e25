package io.nucx.transport.rdma;

import io.nucx.transport.NucxConfig;
import io.nucx.transport.NucxConfigException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The rdma transport says exactly why it cannot run: the library is absent, the library finds no device (with the
 * errno the real libibverbs reports on a kernel without RDMA), no port is active. Each case runs in a fresh JVM, since
 * a library stays loaded and the emulator reads its settings from the environment.
 */
@Timeout(120)
class RdmaAvailabilityTest {

    private static List<String> probe(String library, Map<String, String> env, String... more) throws Exception {
        String java = ProcessHandle.current().info().command().orElseThrow();
        List<String> cmd = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED", "-cp",
                System.getProperty("java.class.path"), RdmaAvailabilityProbe.class.getName(), library));
        cmd.addAll(List.of(more));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().putAll(env);
        Process p = pb.start();
        List<String> lines = new String(p.getInputStream().readAllBytes()).lines().toList();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), () -> String.join("\n", lines));
        return lines;
    }

    @Test
    void aMissingLibraryIsNamed() throws Exception {
        List<String> out = probe("/nonexistent/libibverbs.so.1", Map.of());
        assertTrue(out.get(0).startsWith("unavailable: rdma: cannot load /nonexistent/libibverbs.so.1"), out.get(0));
        assertTrue(out.get(0).contains("NUCX_VERBS_LIB"), out.get(0));
        assertEquals("[]", out.get(1));
    }

    @Test
    void theEmulatorOffersTwoDevicesWithActivePorts() throws Exception {
        String missing = VerbsEmulator.missing();
        assumeTrue(missing == null, () -> missing);
        List<String> out = probe(VerbsEmulator.library(), Map.of());
        assertEquals("available", out.get(0));
        assertEquals("[Device[name=emu0:1, type=rdma], Device[name=emu1:1, type=rdma]]", out.get(1));
    }

    /**
     * RoCE ports (the emulator as Ethernet): no LIDs, so the address must carry the GRH, from the RoCE v2 GID (index
     * 1 of the table; 0 is v1); frames and a PUT go through.
     */
    @Test
    void roceLanesAddressByTheRoceV2Gid() throws Exception {
        String missing = VerbsEmulator.missing();
        assumeTrue(missing == null, () -> missing);
        String java = ProcessHandle.current().info().command().orElseThrow();
        ProcessBuilder pb = new ProcessBuilder(List.of(java, "--enable-native-access=ALL-UNNAMED", "-cp",
                System.getProperty("java.class.path"), RdmaLoopbackProbe.class.getName(), VerbsEmulator.library()))
                .redirectErrorStream(true);
        pb.environment().put("VERBS_EMU_LINK_LAYER", "ethernet");
        Process p = pb.start();
        List<String> out = new String(p.getInputStream().readAllBytes()).lines()
                .filter(l -> l.startsWith("LINK") || l.startsWith("OK") || l.startsWith("FAILED")).toList();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        assertEquals(List.of("LINK 2 GID 1 LID 0", "LINK 2 GID 1 LID 0", "OK"), out);
    }

    /** The wireup connects rdma lanes on both sides: "all" takes rdma where it runs; naming it works too. */
    @Test
    void allTakesRdmaWhereItRunsAndNamingItSelectsIt() throws Exception {
        String missing = VerbsEmulator.missing();
        assumeTrue(missing == null, () -> missing);
        List<String> out = probe(VerbsEmulator.library(), Map.of("NUCX_VERBS_LIB", VerbsEmulator.library()), "select");
        assertTrue(out.get(0).startsWith("all -> ") && out.get(0).contains("rdma"), out.get(0));
        assertEquals("tcp,rdma -> [tcp, rdma]", out.get(1));
    }

    @Test
    void noDeviceAndNoActivePortAreTold() throws Exception {
        String missing = VerbsEmulator.missing();
        assumeTrue(missing == null, () -> missing);
        List<String> none = probe(VerbsEmulator.library(), Map.of("VERBS_EMU_DEVICES", "0"));
        assertEquals("unavailable: rdma: no RDMA device (ibv_get_device_list found none, or no provider for them)",
                none.get(0));
        List<String> down = probe(VerbsEmulator.library(), Map.of("VERBS_EMU_PORT_STATE", "down"));
        assertEquals("unavailable: rdma: no active port: emu0 port 1 DOWN, emu1 port 1 DOWN", down.get(0));
    }

    /** The real libibverbs on a kernel without RDMA: NULL from ibv_get_device_list with errno ENOSYS, named. */
    @Test
    void theRealLibraryWithoutKernelSupportSaysEnosys() throws Exception {
        assumeTrue(Files.exists(Path.of("/sys/class/infiniband_verbs")) || realLibraryInstalled(),
                "libibverbs.so.1 is not installed");
        assumeTrue(!Files.exists(Path.of("/sys/class/infiniband_verbs")),
                "this machine has RDMA support: the real library may find devices");
        List<String> out = probe("libibverbs.so.1", Map.of());
        assertTrue(out.get(0).startsWith("unavailable: rdma: no RDMA device: ibv_get_device_list failed: ENOSYS"),
                out.get(0));
        assertTrue(out.get(0).contains("the kernel has no RDMA support"), out.get(0));
    }

    private static boolean realLibraryInstalled() throws IOException {
        for (String dir : List.of("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib")) {
            if (Files.exists(Path.of(dir, "libibverbs.so.1"))) {
                return true;
            }
        }
        return false;
    }

    @Test
    void itsSettingsAreValidatedLikeTheOthers() {
        NucxConfig ok = NucxConfig.of(Map.of("VERBS_LIB", "/opt/x/libibverbs.so.1", "RDMA_SEG_SIZE", "16k",
                "RDMA_RX_DEPTH", "64"), Map.of()).validate();
        assertEquals("/opt/x/libibverbs.so.1", ok.get(RdmaConfig.VERBS_LIB));
        assertEquals(16384, (long) ok.get(RdmaConfig.SEG_SIZE));
        assertEquals(64, (int) ok.get(RdmaConfig.RX_DEPTH));
        NucxConfigException seg = assertThrows(NucxConfigException.class,
                () -> NucxConfig.of(Map.of("RDMA_SEG_SIZE", "512"), Map.of()).validate());
        assertTrue(seg.getMessage().contains("RDMA_SEG_SIZE") && seg.getMessage().contains("512"), seg.getMessage());
        NucxConfigException depth = assertThrows(NucxConfigException.class,
                () -> NucxConfig.of(Map.of(), Map.of("NUCX_RDMA_RX_DEPTH", "lots")).validate());
        assertTrue(depth.getMessage().contains("NUCX_RDMA_RX_DEPTH"), depth.getMessage());
        NucxConfigException lib = assertThrows(NucxConfigException.class,
                () -> NucxConfig.of(Map.of("VERBS_LIB", " "), Map.of()).validate());
        assertTrue(lib.getMessage().contains("VERBS_LIB"), lib.getMessage());
    }
}
