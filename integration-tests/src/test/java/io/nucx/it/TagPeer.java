package io.nucx.it;

import io.netty.buffer.Unpooled;
import io.netty.util.concurrent.Future;
import io.nucx.Endpoint;
import io.nucx.NucxBootstrap;
import io.nucx.Worker;
import io.nucx.WorkerAddress;
import io.nucx.protocol.tag.TagMessage;
import io.nucx.transport.testing.LeakRecorder;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The other process of the multi-process tests. Starts a worker (transports and engine from NUCX_* in its
 * environment), prints {@code ADDRESS <hex>}, receives {@code count} messages with any tag (sizes from a
 * comma-separated second argument, in turn, if given), checks each one against {@link MessagePlan} and that they came in send order, then answers on the endpoint the worker created for the
 * sender with a report (tag {@link #REPORT_TAG}): "OK <count> <bytes>" or the first error. Before the report it
 * prints {@code LANES rma=... refusal=...} and {@code COUNTERS {...}} (its endpoint's RMA lane and protocol
 * counters). Exits 3 on a leak.
 */
public final class TagPeer {

    static final long REPORT_TAG = 0x7fff_0000_0000_0000L;

    /** The peer's report text, once it arrived (at most {@code seconds}); the message is released. */
    static String report(Future<TagMessage> report, long seconds) throws Exception {
        TagMessage m = report.get(seconds, TimeUnit.SECONDS);
        try {
            return m.content().toString(StandardCharsets.UTF_8);
        } finally {
            m.release();
        }
    }

    public static void main(String[] args) throws Exception {
        LeakRecorder.install();
        int count = Integer.parseInt(args[0]);
        // Message i has size sizes[i % n] if sizes are given (comma-separated), else MessagePlan's size.
        int[] sizes = args.length > 1 ? Arrays.stream(args[1].split(",")).mapToInt(Integer::parseInt)
                .toArray() : null;
        Worker worker = new NucxBootstrap().name("peer").start();
        System.out.println("ADDRESS " + worker.address().toHex());
        System.out.flush();
        String report;
        long bytes = 0;
        try {
            report = null;
            for (int i = 0; i < count && report == null; i++) {
                TagMessage m = worker.tagRecv(0, 0).get(120, TimeUnit.SECONDS);
                try {
                    if (m.tag() != i) {
                        report = "message " + i + " arrived with tag " + m.tag() + " (out of order)";
                    } else {
                        report = sizes == null ? MessagePlan.check(i, m.content())
                                : MessagePlan.check(i, sizes[i % sizes.length], m.content());
                        bytes += m.content().readableBytes();
                    }
                } finally {
                    m.release();
                }
            }
        } catch (Exception e) {
            report = "receive failed: " + e;
        }
        if (report == null) {
            report = "OK " + count + " " + bytes;
        }
        Endpoint reply = worker.endpoints().iterator().next();
        // What carried the data on this side, for tests that ask (rndv/get/zcopy read, or refused and fell back).
        System.out.println("LANES rma=" + reply.rmaLane() + " refusal=" + reply.rmaRefusal());
        System.out.println("COUNTERS " + worker.counters().snapshot());
        System.out.flush();
        reply.tagSend(REPORT_TAG, Unpooled.copiedBuffer(report, StandardCharsets.UTF_8)).sync();
        PeerExit.closeAndExit(worker, 10);
    }

    /** The report a {@link TagPeer} sent, as text; the message is released. */
    static String awaitReport(Future<TagMessage> report, long seconds) throws Exception {
        TagMessage m = report.get(seconds, TimeUnit.SECONDS);
        try {
            return m.content().toString(StandardCharsets.UTF_8);
        } finally {
            m.release();
        }
    }

    /** Sends {@code sizes} (direct buffers) as messages 0..n-1 to a {@link TagPeer}, each awaited; its report. */
    static String sendAll(Worker worker, PeerProcess peer, WorkerAddress peerAddress, int[] sizes) throws Exception {
        Future<TagMessage> report = worker.tagRecv(REPORT_TAG, -1L);
        Endpoint ep = worker.connect(peerAddress);
        for (int i = 0; i < sizes.length; i++) {
            var f = ep.tagSend(i, MessagePlan.directContent(i, sizes[i]));
            int n = sizes[i];
            assertTrue(f.await(120, TimeUnit.SECONDS), () -> "send of " + n + " bytes timed out");
            assertTrue(f.isSuccess(), () -> "send failed: " + f.cause() + "\n" + peer.stderr());
        }
        return awaitReport(report, 120);
    }
}
