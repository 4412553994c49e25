package io.nucx.examples.frameworks;

import io.grpc.Server;
import io.netty.channel.Channel;
import io.netty.channel.EventLoopGroup;
import reactor.netty.DisposableServer;
import reactor.netty.resources.LoopResources;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.StringJoiner;
import java.util.concurrent.TimeUnit;

/**
 * The server side of an app in a process of its own: {@code FrameworkServer http|reactor|grpc nucx|tcp [port]} starts
 * it on 127.0.0.1, prints {@code PORT <n>}, and stops (printing {@code STOPPED}) when its standard input says
 * {@code stop} or closes. Transports for nucx come from NUCX_* (e.g. NUCX_TLS=shm,cma or tcp). Stacks given as a list
 * ({@code tcp,nucx}) start one server each, side by side in the process (on {@code port}, {@code port + 1}, ... when a
 * port is given), and print {@code PORT <n1>,<n2>}: for {@link FrameworkBench}'s runs in turns.
 */
public final class FrameworkServer {

    private FrameworkServer() {
    }

    public static void main(String[] args) throws Exception {
        run(args);
    }

    public static void run(String[] args) throws Exception {
        String framework = args[0];
        String[] stacks = args[1].split(",");
        int firstPort = args.length > 2 ? Integer.parseInt(args[2]) : 0;
        StringJoiner ports = new StringJoiner(",");
        List<AutoCloseable> servers = new ArrayList<>();
        AutoCloseable stop = () -> {
            for (AutoCloseable server : servers) {
                server.close();
            }
        };
        try {
            for (int i = 0; i < stacks.length; i++) {
                Served served = serve(framework, Stack.parse(stacks[i]), new InetSocketAddress("127.0.0.1",
                        firstPort == 0 ? 0 : firstPort + i));
                servers.add(served.stop());
                ports.add(Integer.toString(served.port()));
            }
        } catch (Exception | Error e) {
            stop.close(); // their loops' threads would keep the process alive
            throw e;
        }
        System.out.println("PORT " + ports);
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null && !line.trim().equals("stop"); ) {
            // commands other than stop: none yet
        }
        stop.close();
        System.out.println("STOPPED");
        System.out.flush();
    }

    /** A server of {@code framework} on {@code stack}: the port it listens on and what stops it. */
    private record Served(int port, AutoCloseable stop) {
    }

    private static Served serve(String framework, Stack stack, InetSocketAddress at) throws Exception {
        int port;
        AutoCloseable stop;
        switch (framework) {
            case "http" -> {
                EventLoopGroup boss = stack.newGroup(1);
                EventLoopGroup workers = stack.newGroup(1);
                Channel ch = HttpApp.server(boss, workers, stack.serverChannel(), at);
                port = ((InetSocketAddress) ch.localAddress()).getPort();
                stop = () -> {
                    ch.close().sync();
                    workers.shutdownGracefully(0, 5, TimeUnit.SECONDS).sync();
                    boss.shutdownGracefully(0, 5, TimeUnit.SECONDS).sync();
                };
            }
            case "reactor" -> {
                LoopResources loops = stack == Stack.NUCX ? new NucxLoopResources(1) : ReactorApp.tcpLoops(1);
                DisposableServer s = ReactorApp.server(loops, at);
                port = ((InetSocketAddress) s.address()).getPort();
                stop = () -> {
                    s.disposeNow(Duration.ofSeconds(10));
                    loops.disposeLater().block(Duration.ofSeconds(10));
                };
            }
            case "grpc" -> {
                EventLoopGroup boss = stack.newGroup(1);
                EventLoopGroup workers = stack.newGroup(1);
                Server s = GrpcApp.server(boss, workers, stack.serverChannelType(), at);
                port = ((InetSocketAddress) s.getListenSockets().get(0)).getPort();
                stop = () -> {
                    s.shutdown().awaitTermination(10, TimeUnit.SECONDS);
                    workers.shutdownGracefully(0, 5, TimeUnit.SECONDS).sync();
                    boss.shutdownGracefully(0, 5, TimeUnit.SECONDS).sync();
                };
            }
            default -> throw new IllegalArgumentException("framework '" + framework + "': http, reactor or grpc");
        }
        return new Served(port, stop);
    }
}
