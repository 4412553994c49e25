package io.nucx.it;

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
 * The receiving process of the lane failover test. Starts a worker (settings from NUCX_* in its environment: shm and
 * tcp, error mode failover), prints {@code ADDRESS <hex>}, posts {@code N} receives of tag {@link #TAG} in order (so
 * receive i takes the i-th message to arrive) and checks message i against {@link MessagePlan} at
 * {@link #size(int)}. With {@code drop}, once a third of them arrived it takes its own AM lane down
 * ({@code Endpoint.closeLane(0)}: the shm lane's rings and socket really close) and prints {@code DROPPED <lane>}. At
 * the end it prints {@code LANES <lanes in use>}, {@code REPORT OK} (or what was wrong: a message out of order,
 * damaged, missing, or one more than sent), waits until the sender closes the endpoint, and exits 0 (3 on a leak).
 */
public final class FailoverPeer {

    static final long TAG = 7;
    /** The sender's last message: everything before it, duplicates included, has arrived when it has. */
    static final long FENCE = 8;

    /** Message sizes: MessagePlan's, at most 1 MiB (the stream is long; the 4 MiB ones add time, not coverage). */
    static int size(int i) {
        return Math.min(MessagePlan.size(i), 1 << 20);
    }

    public static void main(String[] args) throws Exception {
        LeakRecorder.install();
        int n = Integer.parseInt(args[0]);
        boolean drop = args.length > 1 && args[1].equals("drop");
        Worker worker = new NucxBootstrap().name("failover-peer").start();
        System.out.println("ADDRESS " + worker.address().toHex());
        System.out.flush();
        List<Future<TagMessage>> recvs = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            recvs.add(worker.tagRecv(TAG, -1L));
        }
        String report = "OK";
        Endpoint ep = null;
        for (int i = 0; i < n && report.equals("OK"); i++) {
            Future<TagMessage> f = recvs.get(i);
            if (!f.await(60, TimeUnit.SECONDS) || !f.isSuccess()) {
                report = "message " + i + " did not arrive: " + f.cause();
                break;
            }
            TagMessage m = f.getNow();
            try {
                String bad = MessagePlan.check(i, size(i), m.content());
                if (bad != null) {
                    report = "message " + i + ": " + bad;
                }
            } finally {
                m.release();
            }
            if (drop && i == n / 3) {
                ep = worker.endpoints().iterator().next();
                String lane = ep.laneNames().get().get(0);
                ep.closeLane(0).get(10, TimeUnit.SECONDS);
                System.out.println("DROPPED " + lane);
                System.out.flush();
            }
        }
        Future<TagMessage> fence = worker.tagRecv(FENCE, -1L);
        if (!fence.await(60, TimeUnit.SECONDS) || !fence.isSuccess()) {
            report = report.equals("OK") ? "the fence did not arrive: " + fence.cause() : report;
        } else {
            fence.getNow().release(); // a duplicate of an earlier message would have arrived before it, unexpected
        }
        int extra = worker.eventLoop().submit(worker::unexpectedCount).get();
        if (report.equals("OK") && extra != 0) {
            report = extra + " message(s) more than sent";
        }
        ep = worker.endpoints().iterator().next();
        System.out.println("LANES " + ep.laneNames().get());
        System.out.println("REPORT " + report);
        System.out.flush();
        ep.closeFuture().await(60, TimeUnit.SECONDS);
        PeerExit.closeAndExit(worker, 20);
    }
}
