package io.nucx.examples.frameworks;

import io.netty.buffer.Unpooled;
import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;
import reactor.netty.http.client.HttpClient;
import reactor.netty.http.server.HttpServer;
import reactor.netty.resources.LoopResources;

import java.net.InetSocketAddress;
import java.time.Duration;

/**
 * The same exchange as {@link HttpApp}, written with Reactor Netty's {@code HttpServer} and {@code HttpClient}: the
 * server answers a POST with the SHA-256 and length of the body it got and a body of {@code x-response-size} bytes
 * from {@code x-response-seed}. Which transport runs it is only the {@code LoopResources} given
 * ({@link NucxLoopResources} for nucx, Reactor's own for TCP).
 */
public final class ReactorApp {

    private ReactorApp() {
    }

    /** Reactor's own TCP loops, for the baseline. */
    public static LoopResources tcpLoops(int threads) {
        return LoopResources.create("reactor-tcp", threads, true);
    }

    public static DisposableServer server(LoopResources loops, InetSocketAddress at) {
        return HttpServer.create().runOn(loops).bindAddress(() -> at)
                .handle((req, res) -> {
                    int size = Integer.parseInt(req.requestHeaders().get("x-response-size", "0"));
                    long seed = Long.parseLong(req.requestHeaders().get("x-response-seed", "0"));
                    boolean hash = !"no".equals(req.requestHeaders().get("x-hash"));
                    // Hashed and counted where the body lies, as HttpApp's handler does: a byte[] per body (as
                    // asByteArray makes) is a humongous object for the GC from 1 MiB, and the bench measured that.
                    return req.receive().aggregate()
                            .map(body -> new Received(hash ? Bodies.sha256(body) : "-", body.readableBytes()))
                            .defaultIfEmpty(new Received(hash ? Bodies.sha256(new byte[0]) : "-", 0))
                            .flatMap(got -> res.header("x-request-sha256", got.sha256())
                                    .header("x-request-length", Integer.toString(got.length()))
                                    .header("content-length", Integer.toString(size))
                                    .sendObject(Unpooled.wrappedBuffer(Bodies.of(seed, size))).then());
                })
                .bindNow(Duration.ofSeconds(30));
    }

    public static HttpClient client(LoopResources loops, InetSocketAddress to) {
        return HttpClient.create().runOn(loops).remoteAddress(() -> to);
    }

    /** One POST; blocks for the answer. */
    public static HttpApp.Answered post(HttpClient client, byte[] body, int responseSize, long seed,
                                        Duration timeout) {
        return post(client, body, responseSize, seed, true, timeout);
    }

    /** One POST; {@code hash} false: the server does not hash the body ({@code x-hash: no}). */
    public static HttpApp.Answered post(HttpClient client, byte[] body, int responseSize, long seed, boolean hash,
                                        Duration timeout) {
        return client.headers(h -> h.set("x-response-size", responseSize).set("x-response-seed", seed)
                        .set("x-hash", hash ? "yes" : "no"))
                .post().uri("/hash").send(Mono.just(Unpooled.wrappedBuffer(body)))
                .responseSingle((res, content) -> content.asByteArray().defaultIfEmpty(new byte[0])
                        .map(b -> new HttpApp.Answered(res.status().code(), res.responseHeaders()
                                .get("x-request-sha256"), Long.parseLong(res.responseHeaders()
                                .get("x-request-length", "-1")), Bodies.sha256(b), b.length)))
                .block(timeout);
    }

    private record Received(String sha256, int length) {
    }
}
