package io.nucx;

import io.netty.buffer.Unpooled;
import io.netty.util.concurrent.Future;
import io.nucx.protocol.tag.TagMessage;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * In a fresh JVM, the allocator's JFR event classes are loaded by the primer during the first worker's start, not on
 * a worker's loop by a wireup message or the first message's send ({@link AllocatorPrimer}: that load took 60-220 ms,
 * the loop's). The JVM's own log says which Java stack loaded the class.
 */
@Timeout(120)
class AllocatorPrimerTest {

    /** The first of Netty 4.2.18's allocator event classes a chunk loads (its JFR events' common base). */
    private static final String EVENT_CLASS = "io.netty.buffer.AbstractChunkEvent";

    @Test
    void theAllocatorsEventClassesAreLoadedByTheStartNotOnTheLoop() throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        // Netty makes its allocator events only with JFR on (its default): said here, so an environment's
        // -Dio.netty.jfr.enabled=false cannot take away what the test looks for.
        Process p = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-Dio.netty.jfr.enabled=true",
                "-XX:+UnlockDiagnosticVMOptions", "-XX:LogClassLoadingCauseFor=" + EVENT_CLASS,
                "-Xlog:class+load+cause=info", "-cp", System.getProperty("java.class.path"),
                FirstMessage.class.getName())
                .redirectErrorStream(true).start();
        String log;
        try {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            try (InputStream in = p.getInputStream()) {
                in.transferTo(out);
            }
            assertTrue(p.waitFor(60, TimeUnit.SECONDS), "the child JVM ended");
            log = out.toString(StandardCharsets.UTF_8);
        } finally {
            p.destroyForcibly();
        }
        assertEquals(0, p.exitValue(), log);
        assertTrue(log.contains("first message received"), log);
        String stack = stackThatLoaded(log);
        // The primer, called from the start on the starting thread (the child's main), not from a task on a loop.
        assertTrue(stack.contains("io.nucx.AllocatorPrimer.primeOnce") && stack.contains("FirstMessage.main"),
                () -> "loaded by another stack than the start's primer:\n" + stack);
        assertTrue(log.indexOf("WORKERS STARTED") > log.indexOf("Java stack when loading " + EVENT_CLASS),
                () -> "loaded after the start:\n" + log);
    }

    /** The Java stack the JVM logged for {@link #EVENT_CLASS}'s load: its heading and the frame lines under it. */
    private static String stackThatLoaded(String log) {
        int at = log.indexOf("Java stack when loading " + EVENT_CLASS);
        assertTrue(at >= 0, () -> "the JVM logged no load of " + EVENT_CLASS + ":\n" + log);
        StringBuilder stack = new StringBuilder();
        List<String> lines = log.substring(at).lines().toList();
        stack.append(lines.get(0)).append('\n');
        for (String line : lines.subList(1, lines.size())) {
            String frame = line.replaceFirst("^\\[[^]]*]\\[[^]]*]\\[[^]]*]\\s*", "").trim();
            if (!frame.startsWith("at ") && !frame.startsWith("- ")) {
                break;
            }
            stack.append(line).append('\n');
        }
        return stack.toString();
    }

    /** The child: two workers over self, then one tagged message from one to the other. */
    static final class FirstMessage {
        public static void main(String[] args) throws Exception {
            Worker server = new NucxBootstrap().name("server").config("TLS", "self").start();
            Worker client = new NucxBootstrap().name("client").config("TLS", "self").start();
            try {
                System.out.println("WORKERS STARTED");
                Future<TagMessage> received = server.tagRecv(7, -1L);
                client.connect(server.address()).tagSend(7, Unpooled.wrappedBuffer(new byte[8]));
                TagMessage m = received.get(30, TimeUnit.SECONDS);
                m.release();
                System.out.println("first message received");
            } finally {
                client.close().get(30, TimeUnit.SECONDS);
                server.close().get(30, TimeUnit.SECONDS);
            }
        }
    }
}
