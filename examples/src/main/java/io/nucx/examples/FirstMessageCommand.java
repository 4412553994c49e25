package io.nucx.examples;

import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.util.concurrent.Future;
import io.nucx.Endpoint;
import io.nucx.NucxBootstrap;
import io.nucx.Worker;
import io.nucx.protocol.tag.TagMessage;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.lang.management.ManagementFactory;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CancellationException;
import java.util.concurrent.TimeUnit;

/**
 * {@code nucx first-message}: how long a fresh JVM takes to its first message, as an application that starts,
 * connects and sends once sees it (no JIT warm-up unless NUCX_WARMUP asks): two workers in this JVM, the second
 * connecting to the first and sending it one 8-byte tagged message, then a second one. Meant to run once per JVM
 * (bench/first-message.sh runs it in fresh ones); a second run in the same JVM measures a warm one.
 */
@Command(name = "first-message", mixinStandardHelpOptions = true,
        description = "Time a fresh JVM's way to its first message: two workers start here, one connects to the "
                + "other and sends it 8 bytes, then 8 more; prints each step in ms.")
final class FirstMessageCommand implements Callable<Integer> {

    /** The messages' tag ("firstM" in ASCII): any fixed tag would do, the server posts for it alone. */
    private static final long TAG = 0x66697273744dL;
    private static final int SIZE = 8;
    private static final long STEP_SECONDS = 60;

    @Option(names = "--tls", description = "The transports (NUCX_TLS for both workers; default: the environment's).")
    String tls;

    @Override
    public Integer call() throws Exception {
        long uptimeMs = ManagementFactory.getRuntimeMXBean().getUptime();
        long t0 = System.nanoTime();
        Worker server = bootstrap("first-message-server").start();
        Worker client = null;
        try {
            long serverStarted = System.nanoTime();
            client = bootstrap("first-message-client").start();
            long clientStarted = System.nanoTime();
            Future<TagMessage> first = server.tagRecv(TAG, -1L);
            Endpoint ep = client.connect(server.address());
            long connected = System.nanoTime();
            ChannelFuture sent = ep.tagSend(TAG, Unpooled.wrappedBuffer(new byte[SIZE]));
            receive(first, sent, "first");
            long received = System.nanoTime();
            Future<TagMessage> second = server.tagRecv(TAG, -1L);
            receive(second, ep.tagSend(TAG, Unpooled.wrappedBuffer(new byte[SIZE])), "second");
            long secondReceived = System.nanoTime();
            System.out.printf(Locale.ROOT, "first-message: JVM up %d ms at the command; server start %.1f, client "
                            + "start %.1f, connect() %.1f, first message received %.1f (from the command %.1f, from "
                            + "the JVM's start %.0f), second message %.3f ms%n", uptimeMs,
                    ms(serverStarted - t0), ms(clientStarted - serverStarted), ms(connected - clientStarted),
                    ms(received - connected), ms(received - t0), uptimeMs + ms(received - t0),
                    ms(secondReceived - received));
            return 0;
        } finally {
            try {
                if (client != null) {
                    client.close().await(STEP_SECONDS, TimeUnit.SECONDS);
                }
            } finally {
                server.close().await(STEP_SECONDS, TimeUnit.SECONDS);
            }
        }
    }

    /** Waits for {@code received}, failing at once with the send's own error if the send fails first. */
    private static void receive(Future<TagMessage> received, ChannelFuture sent, String which) throws Exception {
        sent.addListener(f -> {
            if (!f.isSuccess()) {
                received.cancel(false);
            }
        });
        try {
            received.get(STEP_SECONDS, TimeUnit.SECONDS).release();
        } catch (CancellationException e) {
            throw new IllegalStateException("the " + which + " message's send failed", sent.cause());
        }
        if (!sent.await(STEP_SECONDS, TimeUnit.SECONDS) || !sent.isSuccess()) {
            throw new IllegalStateException("the " + which + " message's send did not complete", sent.cause());
        }
    }

    private NucxBootstrap bootstrap(String name) {
        NucxBootstrap b = new NucxBootstrap().name(name);
        return tls == null ? b : b.config("TLS", tls);
    }

    private static double ms(long nanos) {
        return nanos / 1e6;
    }
}
