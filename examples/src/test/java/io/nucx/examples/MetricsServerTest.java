package io.nucx.examples;

import io.netty.buffer.Unpooled;
import io.netty.util.concurrent.Future;
import io.nucx.Endpoint;
import io.nucx.NucxBootstrap;
import io.nucx.Worker;
import io.nucx.protocol.tag.TagMessage;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A Prometheus scrape of two workers' meters, read over HTTP as Prometheus reads it: messages and bytes by protocol
 * and transport match what was sent, the wireup timer counted the endpoint, gauges and the failure counter move, and
 * Netty's own allocator and event loop meters are there.
 */
@Timeout(60)
class MetricsServerTest {

    private static String scrape(MetricsServer server) throws Exception {
        HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + server.port() + "/metrics")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode());
        return r.body();
    }

    /** The value of the sample whose name and labels match {@code pattern} (a regex), or -1 when absent. */
    private static double sample(String scrape, String pattern) {
        Matcher m = Pattern.compile("(?m)^" + pattern + " ([0-9.eE+-]+)$").matcher(scrape);
        return m.find() ? Double.parseDouble(m.group(1)) : -1;
    }

    @Test
    void aScrapeShowsWhatTheWorkersDid() throws Exception {
        try (MetricsServer server = MetricsServer.start(0)) {
            Worker a = new NucxBootstrap().name("a").config("TLS", "tcp").start();
            Worker b = new NucxBootstrap().name("b").config("TLS", "tcp").start();
            try {
                server.bind(a);
                server.bind(b);
                Endpoint ep = a.connect(b.address());
                for (int i = 0; i < 10; i++) {
                    ep.tagSend(1, Unpooled.wrappedBuffer(new byte[8])).sync();
                    b.tagRecv(1, -1L).get(10, TimeUnit.SECONDS).release();
                }
                Future<TagMessage> big = b.tagRecv(2, -1L);
                ep.tagSend(2, Unpooled.wrappedBuffer(new byte[8 << 20])).sync(); // rendezvous over tcp
                big.get(30, TimeUnit.SECONDS).release();
                assertTrue(ep.wireupFuture().await(10, TimeUnit.SECONDS));
                String s = scrape(server);
                assertEquals(10, sample(s, "nucx_messages_sent_total\\{protocol=\"egr/short\",transport=\"tcp\","
                        + "worker=\"a\"\\}"), s);
                assertEquals(80, sample(s, "nucx_data_sent_bytes_total\\{protocol=\"egr/short\",transport=\"tcp\","
                        + "worker=\"a\"\\}"), s);
                assertEquals(8 << 20, sample(s, "nucx_data_sent_bytes_total\\{protocol=\"tag/rndv\",transport=\"tcp\","
                        + "worker=\"a\"\\}"), s);
                assertEquals(1, sample(s, "nucx_wireup_seconds_count\\{worker=\"a\"\\}"), s);
                assertTrue(sample(s, "nucx_wireup_seconds_sum\\{worker=\"a\"\\}") > 0, s);
                assertEquals(1, sample(s, "nucx_endpoints\\{worker=\"b\"\\}"), s);
                assertEquals(0, sample(s, "nucx_rendezvous_in_flight\\{worker=\"a\"\\}"), s);
                assertEquals(0, sample(s, "nucx_unexpected_messages\\{worker=\"b\"\\}"), s);
                assertTrue(s.contains("netty_allocator_memory_used"), "Netty's allocator meters");
                assertTrue(s.contains("netty_eventexecutor_tasks_pending"), "Netty's event loop meters");
                b.close().get(10, TimeUnit.SECONDS); // a's endpoint fails with a reset: the peer went
                assertTrue(ep.errorFuture().await(10, TimeUnit.SECONDS));
                assertEquals(1, sample(scrape(server), "nucx_endpoint_errors_total\\{cause=\"ConnectionResetException\","
                        + "worker=\"a\"\\}"));
            } finally {
                a.close().get(10, TimeUnit.SECONDS);
                b.close().get(10, TimeUnit.SECONDS);
            }
        }
    }
}
