package io.nucx.it.cluster;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The test's end of a node's control channel ({@code nucx node --control unix:PATH}): requests {@code ID VERB ARG...},
 * answers {@code ID OK TEXT} / {@code ID ERR TEXT} in completion order, so several commands may run at once.
 */
final class NodeClient implements AutoCloseable {

    /** A command the node answered with ERR. */
    static final class CommandFailed extends RuntimeException {
        CommandFailed(String node, String command, String text) {
            super(node + ": '" + abbreviate(command) + "' failed: " + text);
        }
    }

    private final String node;
    private final SocketChannel channel;
    private final OutputStream out;
    private final Map<Long, CompletableFuture<String>> waiting = new ConcurrentHashMap<>();
    private final Map<Long, String> commands = new ConcurrentHashMap<>();
    private final AtomicLong ids = new AtomicLong();
    private volatile IOException lost;

    private NodeClient(String node, SocketChannel channel) {
        this.node = node;
        this.channel = channel;
        this.out = Channels.newOutputStream(channel);
        Thread.ofPlatform().daemon().name("node-client-" + node).start(this::read);
    }

    /** Connects once the node's socket file exists and accepts, within {@code timeout}. */
    static NodeClient connect(String node, Path socket, Duration timeout) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        IOException last = null;
        while (System.nanoTime() < deadline) {
            if (Files.exists(socket)) {
                SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX);
                try {
                    ch.connect(UnixDomainSocketAddress.of(socket));
                    return new NodeClient(node, ch);
                } catch (IOException e) {
                    ch.close();
                    last = e;
                }
            }
            Thread.sleep(50);
        }
        throw new IOException(node + ": no control channel at " + socket + " within " + timeout, last);
    }

    private void read() {
        try {
            BufferedReader in = new BufferedReader(new InputStreamReader(Channels.newInputStream(channel),
                    StandardCharsets.UTF_8));
            for (String line; (line = in.readLine()) != null; ) {
                String[] w = line.split(" ", 3);
                CompletableFuture<String> f = w.length >= 2 ? waiting.remove(parseId(w[0])) : null;
                if (f == null) {
                    continue;
                }
                String text = unescape(w.length == 3 ? w[2] : "");
                String command = commands.remove(parseId(w[0]));
                if (w[1].equals("OK")) {
                    f.complete(text);
                } else {
                    f.completeExceptionally(new CommandFailed(node, command, text));
                }
            }
            lost = new IOException(node + ": control channel closed");
        } catch (IOException e) {
            lost = new IOException(node + ": control channel lost: " + e.getMessage(), e);
        }
        waiting.values().forEach(f -> f.completeExceptionally(lost));
        waiting.clear();
    }

    private static long parseId(String s) {
        try {
            return Long.parseLong(s);
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    private static String unescape(String s) {
        StringBuilder b = new StringBuilder(s.length());
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '\\' && i + 1 < s.length()) {
                char n = s.charAt(++i);
                b.append(n == 'n' ? '\n' : n);
            } else {
                b.append(c);
            }
        }
        return b.toString();
    }

    private static String abbreviate(String command) {
        return command == null || command.length() < 120 ? command : command.substring(0, 117) + "...";
    }

    /** Sends one command; the future completes with the OK text or fails with {@link CommandFailed}. */
    CompletableFuture<String> submit(String command) {
        long id = ids.incrementAndGet();
        CompletableFuture<String> f = new CompletableFuture<>();
        if (lost != null) {
            f.completeExceptionally(lost);
            return f;
        }
        waiting.put(id, f);
        commands.put(id, command);
        byte[] line = (id + " " + command + "\n").getBytes(StandardCharsets.UTF_8);
        try {
            synchronized (out) {
                out.write(line);
                out.flush();
            }
        } catch (IOException e) {
            waiting.remove(id);
            f.completeExceptionally(new IOException(node + ": cannot send '" + abbreviate(command) + "'", e));
        }
        return f;
    }

    /** Runs one command and waits at most {@code timeout} for its OK text. */
    String call(String command, Duration timeout) {
        return await(submit(command), command, timeout);
    }

    String call(String command) {
        return call(command, Duration.ofSeconds(60));
    }

    String await(CompletableFuture<String> f, String what, Duration timeout) {
        try {
            return f.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            throw new AssertionError(node + ": no answer to '" + abbreviate(what) + "' within " + timeout);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException r) {
                throw r;
            }
            throw new AssertionError(node + ": '" + abbreviate(what) + "': " + e.getCause(), e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }

    @Override
    public void close() {
        try {
            channel.close();
        } catch (IOException e) {
            // already gone
        }
    }
}
