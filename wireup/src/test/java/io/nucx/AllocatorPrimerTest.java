package io.nucx;

import io.netty.buffer.Unpooled;
import io.nucx.protocol.tag.TagMessage;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
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
        String java = ProcessHandle.current().info().command().orElseThrow();
        Process p = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-XX:+UnlockDiagnosticVMOptions",
                "-XX:LogClassLoadingCauseFor=" + EVENT_CLASS, "-Xlog:class+load+cause=info",
                "-cp", System.getProperty("java.class.path"), FirstMessage.class.getName())
                .redirectErrorStream(true).start();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (InputStream in = p.getInputStream()) {
            in.transferTo(out);
        }
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "the child JVM ended");
        String log = out.toString(StandardCharsets.UTF_8);
        assertEquals(0, p.exitValue(), log);
        assertTrue(log.contains("first message received"), log);
        int at = log.indexOf("Java stack when loading " + EVENT_CLASS);
        assertTrue(at >= 0, () -> "the JVM logged no load of " + EVENT_CLASS + ":\n" + log);
        int end = log.indexOf("Native stack when loading", at);
        String stack = log.substring(at, end < 0 ? log.length() : end);
        assertTrue(stack.contains("io.nucx.AllocatorPrimer"), () -> "loaded by another stack than the primer's:\n"
                + stack);
        assertTrue(log.indexOf("WORKERS STARTED") > at, () -> "loaded after the workers had started:\n" + log);
    }

    /** The child: two workers over self, then one tagged message from one to the other. */
    static final class FirstMessage {
        public static void main(String[] args) throws Exception {
            Worker server = new NucxBootstrap().name("server").config("TLS", "self").start();
            Worker client = new NucxBootstrap().name("client").config("TLS", "self").start();
            try {
                System.out.println("WORKERS STARTED");
                io.netty.util.concurrent.Future<TagMessage> received = server.tagRecv(7, -1L);
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
