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
import java.util.concurrent.TimeUnit;

/**
 * The server side of an app in a process of its own: {@code FrameworkServer http|reactor|grpc nucx|tcp [port]} starts
 * it on 127.0.0.1, prints {@code PORT <n>}, and stops (printing {@code STOPPED}) when its standard input says
 * {@code stop} or closes. Transports for nucx come from NUCX_* (e.g. NUCX_TLS=shm,cma or tcp).
 */
public final class FrameworkServer {

    private FrameworkServer() {
    }

    public static void main(String[] args) throws Exception {
        run(args);
    }

    public static void run(String[] args) throws Exception {
        String framework = args[0];
        Stack stack = Stack.parse(args[1]);
        InetSocketAddress at = new InetSocketAddress("127.0.0.1", args.length > 2 ? Integer.parseInt(args[2]) : 0);
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
                    s.disposeNow(java.time.Duration.ofSeconds(10));
                    loops.disposeLater().block(java.time.Duration.ofSeconds(10));
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
        System.out.println("PORT " + port);
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null && !line.trim().equals("stop"); ) {
            // commands other than stop: none yet
        }
        stop.close();
        System.out.println("STOPPED");
        System.out.flush();
    }
}
