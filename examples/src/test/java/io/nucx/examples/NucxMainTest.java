package io.nucx.examples;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import java.util.concurrent.ExecutionException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What {@code bin/nucx} prints when a command fails. */
class NucxMainTest {

    @Test
    void aFailureIsItsRootCausesMessage() {
        assertEquals("endpoint #0 failed",
                NucxMain.describe(new ExecutionException(new IOException("endpoint #0 failed"))));
    }

    @Test
    void failuresSuppressedOnTheWayAreNamedToo() {
        // An in-process perftest: the client sees its connection go; the server's own failure closed it.
        IOException client = new IOException("endpoint #0 to perftest-server failed");
        client.addSuppressed(new IllegalStateException("unexpected perftest tag 7"));
        ExecutionException thrown = new ExecutionException(client);
        thrown.addSuppressed(new IOException("server timed out"));
        assertEquals("endpoint #0 to perftest-server failed; and: server timed out; and: unexpected perftest tag 7",
                NucxMain.describe(thrown));
    }

    @Test
    void aCommandLineHoldsTheSubcommandNamedOrEveryOne() {
        assertEquals(List.of("perftest"), List.copyOf(NucxMain.commandLine("perftest", "-t", "tag_lat")
                .getSubcommands().keySet()));
        List<String> all = List.of("info", "perftest", "calibrate", "demo", "node", "config-doc", "sweep-report",
                "aot-train", "soak", "cores", "first-message");
        assertEquals(all, List.copyOf(NucxMain.commandLine().getSubcommands().keySet()));
        assertEquals(all, List.copyOf(NucxMain.commandLine("--help").getSubcommands().keySet()));
        assertEquals(all, List.copyOf(NucxMain.commandLine("perftests").getSubcommands().keySet()));
        StringWriter usage = new StringWriter();
        NucxMain.commandLine("--help").usage(new PrintWriter(usage));
        for (String name : all) {
            assertTrue(usage.toString().contains("  " + name + " "), () -> name + " not in\n" + usage);
        }
    }
}
