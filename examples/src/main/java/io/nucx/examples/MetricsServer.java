package io.nucx.examples;

import com.sun.net.httpserver.HttpServer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.nucx.Worker;
import io.nucx.WorkerMetrics;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;

/**
 * A Prometheus scrape endpoint ({@code GET /metrics}, text format) for the workers bound to it: how a nucx
 * application publishes {@link WorkerMetrics}. Listens on loopback only; {@code bin/nucx perftest --metrics-port}
 * runs one.
 */
public final class MetricsServer implements AutoCloseable {

    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final HttpServer http;

    private MetricsServer(HttpServer http) {
        this.http = http;
    }

    /** Serves on 127.0.0.1:{@code port} (0: any free port). */
    public static MetricsServer start(int port) throws IOException {
        HttpServer http = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 0);
        MetricsServer server = new MetricsServer(http);
        http.createContext("/metrics", exchange -> {
            byte[] body = server.registry.scrape().getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
            exchange.sendResponseHeaders(200, body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        });
        http.start();
        return server;
    }

    /** Publishes {@code worker}'s meters from now on. */
    public void bind(Worker worker) {
        new WorkerMetrics(worker).bindTo(registry);
    }

    /** The port it listens on. */
    public int port() {
        return http.getAddress().getPort();
    }

    @Override
    public void close() {
        http.stop(0);
        registry.close();
    }
}
