package io.nucx.it;

import io.netty.channel.EventLoopGroup;
import io.nucx.NucxChannel;
import io.nucx.NucxEventLoopGroup;
import io.nucx.examples.frameworks.Bodies;
import io.nucx.examples.frameworks.HttpApp;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Netty's own HTTP/1.1 codecs (HttpServerCodec, HttpObjectAggregator, HttpClientCodec), an app written for sockets,
 * between two processes over nucx with only the group and channel classes changed: pipelined POSTs of 0 B to 64 MiB
 * bodies, each answered with a body of another size up to 64 MiB; both directions checked by SHA-256, in order.
 */
@Timeout(300)
class HttpFrameworkTest {

    static final int[] SIZES = {0, 1, 100, 8_191, 65_536, 700_000, 1 << 20, 8 << 20, 64 << 20, 17, 0, 3 << 20};

    @ParameterizedTest(name = "over {0}")
    @ValueSource(strings = {"shm,cma", "tcp"})
    void pipelinedRequestsOfEverySizeAreAnsweredIntactAndInOrder(String tls) throws Exception {
        try (FrameworkTransport t = FrameworkTransport.start("http", tls)) {
            EventLoopGroup group = new NucxEventLoopGroup(1);
            try (HttpApp.Client client = HttpApp.Client.connect(group, NucxChannel.class,
                    new InetSocketAddress("127.0.0.1", t.port))) {
                t.assertLanes(client.channel());
                for (int i = 0; i < SIZES.length; i++) {
                    client.write(Bodies.of(i, SIZES[i]), SIZES[(i + 5) % SIZES.length], 1000 + i);
                }
                client.flush(); // all of them pipelined before any answer
                for (int i = 0; i < SIZES.length; i++) {
                    HttpApp.Answered a = client.next(120, TimeUnit.SECONDS);
                    int answer = SIZES[(i + 5) % SIZES.length];
                    assertEquals(200, a.status());
                    assertEquals(SIZES[i], a.requestLength(), "request " + i + ": length the server got");
                    assertEquals(Bodies.sha256(Bodies.of(i, SIZES[i])), a.requestSha256(),
                            "request " + i + " (" + SIZES[i] + " B): the server got other bytes");
                    assertEquals(answer, a.bodyLength(), "answer " + i + ": length");
                    assertEquals(Bodies.sha256(Bodies.of(1000 + i, answer)), a.bodySha256(),
                            "answer " + i + " (" + answer + " B): other bytes arrived");
                }
            } finally {
                group.shutdownGracefully(0, 5, TimeUnit.SECONDS).sync();
            }
        }
    }
}
