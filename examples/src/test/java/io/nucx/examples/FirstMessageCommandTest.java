package io.nucx.examples;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code nucx first-message}: both messages arrive, and every step is timed in the order it happened. */
@Timeout(120)
class FirstMessageCommandTest {

    private static final Pattern LINE = Pattern.compile("first-message: JVM up (\\d+) ms at the command; server start "
            + "([\\d.]+), client start ([\\d.]+), connect\\(\\) ([\\d.]+), first message received ([\\d.]+) \\(from "
            + "the command ([\\d.]+), from the JVM's start (\\d+)\\), second message ([\\d.]+) ms");

    @Test
    void twoWorkersExchangeTwoMessagesAndEachStepIsTimed() {
        for (String tls : new String[] {"self", "tcp"}) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            PrintStream was = System.out;
            int code;
            try {
                System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
                code = NucxMain.commandLine("first-message").execute("first-message", "--tls", tls);
            } finally {
                System.setOut(was);
            }
            String printed = out.toString(StandardCharsets.UTF_8);
            assertEquals(0, code, printed);
            Matcher m = LINE.matcher(printed);
            assertTrue(m.find(), printed);
            double sum = 0;
            for (int g = 2; g <= 5; g++) {
                double step = Double.parseDouble(m.group(g));
                assertTrue(step >= 0, printed);
                sum += step;
            }
            double fromCommand = Double.parseDouble(m.group(6));
            // The steps follow one another: together they are the time from the command to the first message.
            assertEquals(fromCommand, sum, 0.5, printed);
            assertEquals(Long.parseLong(m.group(1)) + fromCommand, Double.parseDouble(m.group(7)), 1.0, printed);
        }
    }
}
