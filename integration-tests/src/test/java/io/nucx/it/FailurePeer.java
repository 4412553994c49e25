package io.nucx.it;

import io.netty.channel.ChannelFuture;
import io.netty.util.concurrent.Future;
import io.nucx.Endpoint;
import io.nucx.NucxBootstrap;
import io.nucx.Worker;
import io.nucx.protocol.tag.TagMessage;
import io.nucx.transport.testing.LeakRecorder;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The other process of the failure and close tests. Starts a worker (settings from NUCX_* in its environment), prints
 * {@code ADDRESS <hex>}, then runs one role:
 * <ul>
 *   <li>{@code hold N}: receives nothing; once N messages (eager or rendezvous RTS) wait unexpected, prints
 *       {@code HOLDING N} and sleeps until killed (at most 120 s). The test kills or stops it.</li>
 *   <li>{@code close N}: once the sender's endpoint exists, sends a 1 MiB rendezvous message toward it that the
 *       sender never receives and prints {@code PENDING}; receives N messages checked against {@link MessagePlan}
 *       (tag i, MessagePlan's content of size {@code MessagePlan.size(i)}); then waits for its endpoint to fail and
 *       prints {@code ENDPOINT <exception class> <message>} and {@code SEND <exception class>} for its own send,
 *       {@code REPORT OK} if all messages were intact and the endpoint closed (else what was wrong), and exits 0 (3 on a leak).</li>
 *   <li>{@code serve N}: receives N messages of any tag, prints {@code RECEIVED N}, waits until every endpoint has
 *       been closed by the other side, prints {@code ALL CLOSED} and exits 0 (3 on a leak).</li>
 * </ul>
 */
public final class FailurePeer {

    public static void main(String[] args) throws Exception {
        LeakRecorder.install();
        String role = args[0];
        int n = Integer.parseInt(args[1]);
        Worker worker = new NucxBootstrap().name("peer").start();
        System.out.println("ADDRESS " + worker.address().toHex());
        System.out.flush();
        switch (role) {
            case "hold" -> hold(worker, n);
            case "close" -> closeRole(worker, n);
            case "serve" -> serve(worker, n);
            default -> throw new IllegalArgumentException("unknown role " + role);
        }
        PeerExit.closeAndExit(worker, 20);
    }

    private static void hold(Worker worker, int n) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (worker.eventLoop().submit(worker::unexpectedCount).get() < n) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("only " + worker.eventLoop().submit(worker::unexpectedCount).get()
                        + " of " + n + " messages arrived");
            }
            Thread.sleep(10);
        }
        System.out.println("HOLDING " + n);
        System.out.flush();
        Thread.sleep(120_000);
        throw new IllegalStateException("hold: nobody killed this peer within 120 s");
    }

    private static Endpoint awaitEndpoint(Worker worker) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (worker.endpoints().isEmpty()) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("no endpoint within 60 s");
            }
            Thread.sleep(5);
        }
        return worker.endpoints().iterator().next();
    }

    private static void closeRole(Worker worker, int n) throws Exception {
        Endpoint ep = awaitEndpoint(worker);
        ChannelFuture send = ep.tagSend(1_000_000, MessagePlan.content(7, 1 << 20));
        System.out.println("PENDING");
        System.out.flush();
        String report = "OK";
        for (int i = 0; i < n; i++) {
            TagMessage m = worker.tagRecv(i, -1L).get(60, TimeUnit.SECONDS);
            try {
                String bad = MessagePlan.check(i, m.content());
                if (bad != null && report.equals("OK")) {
                    report = bad;
                }
            } finally {
                m.release();
            }
        }
        ep.errorFuture().await(60, TimeUnit.SECONDS);
        Throwable cause = ep.errorFuture().cause();
        System.out.println("ENDPOINT " + (cause == null ? "none " + ep.errorFuture().isDone()
                : cause.getClass().getSimpleName() + " " + cause.getMessage()));
        send.await(60, TimeUnit.SECONDS);
        System.out.println("SEND " + (send.cause() == null ? "none " + send.isDone()
                : send.cause().getClass().getSimpleName()));
        if (!ep.closeFuture().await(10, TimeUnit.SECONDS)) {
            report = "endpoint not closed";
        }
        System.out.println("REPORT " + report);
        System.out.flush();
    }

    private static void serve(Worker worker, int n) throws Exception {
        List<Future<TagMessage>> recvs = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            recvs.add(worker.tagRecv(0, 0));
        }
        for (var r : recvs) {
            r.get(120, TimeUnit.SECONDS).release();
        }
        System.out.println("RECEIVED " + n);
        System.out.flush();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (!worker.endpoints().isEmpty()) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(worker.endpoints().size() + " endpoints still open after 120 s");
            }
            Thread.sleep(10);
        }
        System.out.println("ALL CLOSED");
        System.out.flush();
    }
}
