package io.nucx.transport.rdma;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.PaddingLayout;
import java.lang.foreign.StructLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every Java layout of the bindings against the C compiler: a program generated from the layouts prints gcc's
 * {@code sizeof} and {@code offsetof} of each struct and of each named member (nested, through named and anonymous
 * unions) on the installed {@code <infiniband/verbs.h>}; any difference fails, naming the field. Also the three QP
 * transition masks against the header's enum.
 */
@Timeout(120)
class VerbsLayoutTest {

    /** "struct.path" → {offset, size} as the Java layouts say. */
    private static Map<String, long[]> javaFields() {
        Map<String, long[]> out = new LinkedHashMap<>();
        for (VerbsLayouts.Struct s : VerbsLayouts.ALL) {
            out.put(s.cName() + " .", new long[] {0, s.layout().byteSize()});
            walk(s.cName(), "", s.layout(), 0, out);
        }
        return out;
    }

    private static void walk(String struct, String prefix, GroupLayout g, long base, Map<String, long[]> out) {
        long offset = base;
        for (MemoryLayout m : g.memberLayouts()) {
            long at = g instanceof StructLayout ? offset : base;
            if (!(m instanceof PaddingLayout)) {
                String path = m.name().map(n -> prefix.isEmpty() ? n : prefix + "." + n).orElse(prefix);
                if (m.name().isPresent()) {
                    out.put(struct + " " + path, new long[] {at, m.byteSize()});
                }
                if (m instanceof GroupLayout inner) {
                    walk(struct, path, inner, at, out);
                }
            }
            offset += m.byteSize();
        }
    }

    @Test
    void layoutsMatchTheInstalledHeader() throws Exception {
        String headerMissing = VerbsEmulator.headersMissing();
        Assumptions.assumeTrue(headerMissing == null, () -> headerMissing);
        Map<String, long[]> fields = javaFields();
        StringBuilder c = new StringBuilder("#include <infiniband/verbs.h>\n#include <stdio.h>\n#include <stddef.h>\n"
                + "int main(void) {\n");
        for (String key : fields.keySet()) {
            int sp = key.lastIndexOf(' ');
            String type = key.substring(0, sp);
            String path = key.substring(sp + 1);
            if (path.equals(".")) {
                c.append("    printf(\"%s %zu %zu\\n\", \"").append(key).append("\", (size_t) 0, sizeof(")
                        .append(type).append("));\n");
            } else {
                c.append("    printf(\"%s %zu %zu\\n\", \"").append(key).append("\", offsetof(").append(type)
                        .append(", ").append(path).append("), sizeof(((").append(type).append(" *) 0)->")
                        .append(path).append("));\n");
            }
        }
        c.append("    printf(\"masks %d %d %d\\n\", IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | "
                + "IBV_QP_ACCESS_FLAGS, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | "
                + "IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | "
                + "IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);\n");
        c.append("    printf(\"enums %d %d %d %d %d %d %d %d\\n\", IBV_WR_SEND, IBV_WR_RDMA_READ, "
                + "IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_SEND_SIGNALED, IBV_SEND_INLINE, IBV_WC_RECV, IBV_QPT_RC, "
                + "IBV_EVENT_COMM_EST);\n");
        c.append("    return 0;\n}\n");
        Path dir = Files.createTempDirectory("nucx-verbs-layout");
        Path src = dir.resolve("layout.c");
        Path exe = dir.resolve("layout");
        Files.writeString(src, c);
        Process gcc = new ProcessBuilder("gcc", "-std=gnu11", "-Wall", "-Werror", "-o", exe.toString(), src.toString())
                .redirectErrorStream(true).start();
        String gccOut = new String(gcc.getInputStream().readAllBytes());
        assertTrue(gcc.waitFor(60, TimeUnit.SECONDS));
        assertEquals(0, gcc.exitValue(), () -> "gcc failed on the generated layout program:\n" + gccOut);
        Process run = new ProcessBuilder(exe.toString()).redirectErrorStream(true).start();
        List<String> lines = new String(run.getInputStream().readAllBytes()).lines().toList();
        assertTrue(run.waitFor(30, TimeUnit.SECONDS));
        List<String> wrong = new ArrayList<>();
        int checked = 0;
        for (String line : lines) {
            String[] w = line.split(" ");
            if (w[0].equals("masks")) {
                assertEquals(IbvQpAttr.MASK_INIT, Integer.parseInt(w[1]), "RESET->INIT mask");
                assertEquals(IbvQpAttr.MASK_RTR, Integer.parseInt(w[2]), "INIT->RTR mask");
                assertEquals(IbvQpAttr.MASK_RTS, Integer.parseInt(w[3]), "RTR->RTS mask");
                continue;
            }
            if (w[0].equals("enums")) {
                assertEquals(List.of(IbvSendWr.IBV_WR_SEND, IbvSendWr.IBV_WR_RDMA_READ,
                        IbvSendWr.IBV_WR_ATOMIC_FETCH_AND_ADD, IbvSendWr.IBV_SEND_SIGNALED, IbvSendWr.IBV_SEND_INLINE,
                        IbvWc.IBV_WC_RECV, IbvQpInitAttr.IBV_QPT_RC, IbvAsyncEvent.IBV_EVENT_COMM_EST),
                        Arrays.stream(w, 1, w.length).map(Integer::valueOf).toList(), "verbs enum values");
                continue;
            }
            String key = w[0] + " " + w[1] + " " + w[2];
            long[] java = fields.get(key);
            long offset = Long.parseLong(w[3]);
            long size = Long.parseLong(w[4]);
            checked++;
            if (java == null) {
                wrong.add(key + ": not in the Java layouts");
            } else if (java[0] != offset || java[1] != size) {
                wrong.add(key + ": C offset " + offset + " size " + size + ", Java offset " + java[0] + " size "
                        + java[1]);
            }
        }
        assertEquals(fields.size(), checked, "every Java field printed by the C program");
        assertTrue(wrong.isEmpty(), () -> "layouts differ from <infiniband/verbs.h>:\n" + String.join("\n", wrong));
    }
}
