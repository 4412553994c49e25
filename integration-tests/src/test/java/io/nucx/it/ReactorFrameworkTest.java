package io.nucx.it;

import io.nucx.examples.frameworks.Bodies;
import io.nucx.examples.frameworks.HttpApp;
import io.nucx.examples.frameworks.NucxLoopResources;
import io.nucx.examples.frameworks.ReactorApp;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.netty.http.client.HttpClient;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Reactor Netty's HttpServer and HttpClient, run on nucx by {@code runOn(new NucxLoopResources(...))} alone, between
 * two processes over shm and over tcp: POSTs of 0 B to 16 MiB, several at once over the client's connection pool,
 * each body and answer checked by SHA-256.
 */
@Timeout(300)
class ReactorFrameworkTest {

    static final int[] SIZES = {0, 1, 1000, 65_536, 1 << 20, 16 << 20, 5, 3 << 20};

    @ParameterizedTest(name = "over {0}")
    @ValueSource(strings = {"shm,cma", "tcp"})
    void postsOfEverySizeAreAnsweredIntact(String tls) throws Exception {
        try (FrameworkTransport t = FrameworkTransport.start("reactor", tls)) {
            NucxLoopResources loops = new NucxLoopResources(1);
            try {
                HttpClient client = ReactorApp.client(loops, new InetSocketAddress("127.0.0.1", t.port));
                List<HttpApp.Answered> answers = Flux.range(0, SIZES.length)
                        .flatMapSequential(i -> Mono.fromCallable(() -> ReactorApp.post(client, Bodies.of(i,
                                        SIZES[i]), SIZES[(i + 3) % SIZES.length], 2000 + i, Duration.ofSeconds(120)))
                                .subscribeOn(Schedulers.boundedElastic()), 4)
                        .collectList().block(Duration.ofSeconds(240));
                for (int i = 0; i < SIZES.length; i++) {
                    HttpApp.Answered a = answers.get(i);
                    int answer = SIZES[(i + 3) % SIZES.length];
                    assertEquals(200, a.status());
                    assertEquals(SIZES[i], a.requestLength(), "request " + i + ": length the server got");
                    assertEquals(Bodies.sha256(Bodies.of(i, SIZES[i])), a.requestSha256(), "request " + i);
                    assertEquals(answer, a.bodyLength(), "answer " + i);
                    assertEquals(Bodies.sha256(Bodies.of(2000 + i, answer)), a.bodySha256(), "answer " + i);
                }
            } finally {
                loops.disposeLater().block(Duration.ofSeconds(30));
            }
        }
    }
}
