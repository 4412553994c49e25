package io.nucx.examples;

import io.nucx.transport.NucxConfig;
import io.nucx.transport.Transport;
import io.nucx.transport.Transports;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code nucx info} opens an iface of every available transport and prints its attributes. */
class InfoCommandTest {

    @Test
    void everyAvailableTransportIsOpenedAndDescribed() throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8)) {
            InfoCommand.print(NucxConfig.of(Map.of(), Map.of()), out);
        }
        String text = bytes.toString(StandardCharsets.UTF_8);
        for (Transport t : Transports.all()) {
            if (!t.availability().isAvailable()) {
                continue;
            }
            int at = text.indexOf("Transport: " + t.name() + "\n");
            assertTrue(at >= 0, () -> t.name() + " missing from:\n" + text);
            int next = text.indexOf("Transport: ", at + 1);
            String section = text.substring(at, next < 0 ? text.length() : next);
            assertTrue(section.contains("bandwidth") || section.contains("am:"),
                    () -> t.name() + " printed no attributes:\n" + section);
        }
    }
}
