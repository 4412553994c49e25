package io.nucx.examples.node;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutionException;

/**
 * The node's control channel: a line protocol on a Unix socket or a TCP port. A request is {@code ID VERB ARG...};
 * each runs on its own virtual thread, so a long one (a send waiting for a peer) does not hold the others, and its
 * answer is {@code ID OK TEXT} or {@code ID ERR TEXT}, in completion order. TEXT is one line: a backslash is written
 * {@code \\} and a line break {@code \n}. Several connections may be open at once.
 */
final class ControlServer implements AutoCloseable {

    /** Runs one command; its return value is the OK text, an exception the ERR text. */
    interface Executor {
        String execute(String verb, List<String> args) throws Exception;

        /** Called once the answer to {@code verb} has been written (e.g. to exit after answering "stop"). */
        default void afterReply(String verb) {
        }
    }

    private final ServerSocketChannel server;
    private final Path socketFile;
    private final Executor executor;

    private ControlServer(ServerSocketChannel server, Path socketFile, Executor executor) {
        this.server = server;
        this.socketFile = socketFile;
        this.executor = executor;
    }

    /** {@code unix:/path/to.sock}, {@code tcp:PORT} or {@code tcp:HOST:PORT}. */
    static ControlServer open(String spec, Executor executor) throws IOException {
        if (spec.startsWith("unix:")) {
            Path file = Path.of(spec.substring("unix:".length()));
            Files.deleteIfExists(file); // left by an earlier run of this node (a restarted container)
            ServerSocketChannel s = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
            s.bind(UnixDomainSocketAddress.of(file));
            return new ControlServer(s, file, executor);
        }
        if (spec.startsWith("tcp:")) {
            String rest = spec.substring("tcp:".length());
            int colon = rest.lastIndexOf(':');
            SocketAddress at;
            try {
                at = colon < 0 ? new InetSocketAddress(Integer.parseInt(rest))
                        : new InetSocketAddress(rest.substring(0, colon), Integer.parseInt(rest.substring(colon + 1)));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("--control " + spec + ": bad port (" + e.getMessage() + ")");
            }
            ServerSocketChannel s = ServerSocketChannel.open();
            s.bind(at);
            return new ControlServer(s, null, executor);
        }
        throw new IllegalArgumentException("--control " + spec + ": expected unix:PATH, tcp:PORT or tcp:HOST:PORT");
    }

    String describe() throws IOException {
        return socketFile != null ? "unix:" + socketFile : "tcp:" + server.getLocalAddress();
    }

    /** Accepts connections until closed; each gets its own reader thread. */
    void serve() {
        while (server.isOpen()) {
            SocketChannel c;
            try {
                c = server.accept();
            } catch (IOException e) {
                return; // closed
            }
            Thread.ofVirtual().name("control-conn").start(() -> connection(c));
        }
    }

    private void connection(SocketChannel c) {
        try (c) {
            BufferedReader in = new BufferedReader(new InputStreamReader(Channels.newInputStream(c),
                    StandardCharsets.UTF_8));
            OutputStream out = Channels.newOutputStream(c);
            for (String line; (line = in.readLine()) != null; ) {
                String[] words = line.trim().split("\\s+");
                if (words.length < 2) {
                    if (!line.isBlank()) {
                        reply(out, "-", "ERR", "expected 'ID VERB ARG...', got '" + line + "'");
                    }
                    continue;
                }
                String id = words[0];
                String verb = words[1];
                List<String> args = Arrays.asList(words).subList(2, words.length);
                Thread.ofVirtual().name("control-" + verb).start(() -> {
                    try {
                        reply(out, id, "OK", executor.execute(verb, args));
                    } catch (Throwable t) {
                        Throwable root = t instanceof ExecutionException && t.getCause() != null
                                ? t.getCause() : t;
                        reply(out, id, "ERR", root.getClass().getSimpleName() + ": " + root.getMessage());
                    }
                    executor.afterReply(verb);
                });
            }
        } catch (IOException e) {
            // the test went away; its commands still finish
        }
    }

    private static void reply(OutputStream out, String id, String status, String text) {
        String escaped = (text == null ? "" : text).replace("\\", "\\\\").replace("\n", "\\n");
        byte[] line = (id + " " + status + " " + escaped + "\n").getBytes(StandardCharsets.UTF_8);
        synchronized (out) {
            try {
                out.write(line);
                out.flush();
            } catch (IOException e) {
                // connection gone
            }
        }
    }

    @Override
    public void close() throws IOException {
        server.close();
        if (socketFile != null) {
            Files.deleteIfExists(socketFile);
        }
    }
}
