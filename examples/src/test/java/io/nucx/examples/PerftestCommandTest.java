package io.nucx.examples;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import java.io.PrintWriter;
import java.io.StringWriter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code nucx perftest}'s command line, without running a test. */
class PerftestCommandTest {

    @Test
    void anUnknownDashDValueIsAUsageErrorNamingTheKnownOnesInEitherRole() {
        String[][] clientAndServer = {{"127.0.0.1", "-p", "1", "-D", "zerocopy"}, {"-p", "1", "-D", "zerocopy"}};
        for (String[] args : clientAndServer) {
            StringWriter err = new StringWriter();
            int code = new CommandLine(new PerftestCommand()).setErr(new PrintWriter(err, true)).execute(args);
            assertEquals(2, code, err::toString);
            assertTrue(err.toString().contains("-D: unknown datatype 'zerocopy' (contig | iov | bcopy | zcopy)"),
                    err::toString);
        }
    }

    @Test
    void anUnknownErrorModeIsAUsageErrorNamingTheKnownOnes() {
        StringWriter err = new StringWriter();
        int code = new CommandLine(new PerftestCommand()).setErr(new PrintWriter(err, true))
                .execute("127.0.0.1", "-p", "1", "-e", "sometimes");
        assertEquals(2, code, err::toString);
        assertTrue(err.toString().contains("-e: unknown error mode 'sometimes' (none | peer | failover)"),
                err::toString);
    }
}
