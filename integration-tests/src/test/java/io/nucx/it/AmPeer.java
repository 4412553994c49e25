package io.nucx.it;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.util.concurrent.Promise;
import io.nucx.Endpoint;
import io.nucx.NucxBootstrap;
import io.nucx.Worker;
import io.nucx.transport.testing.LeakRecorder;

import java.util.ArrayDeque;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * The other process of {@link TwoProcessAmTest}: an echo server of active messages. Starts a worker (transports from
 * NUCX_* in its environment), prints {@code ADDRESS <hex>}, and for each message to {@link #ECHO} (user header: the
 * message's index, u32) receives the data into a buffer of its own (rendezvous ones after its handler returned),
 * checks them against {@link MessagePlan} and the index against the order of arrival, and sends them back, in arrival
 * order, with the same header to {@link #ECHOED} on the reply endpoint. A message to {@link #DONE} ends it: it prints
 * {@code REPORT OK <count> rndv=<n>} (or the first error) and exits (3 on a leak).
 */
public final class AmPeer {

    static final int ECHO = 1;
    static final int ECHOED = 2;
    static final int DONE = 3;

    public static void main(String[] args) throws Exception {
        LeakRecorder.install();
        Worker worker = new NucxBootstrap().name("am-peer").start();
        int[] expected = {0};
        int[] rendezvous = {0};
        String[] error = {null};
        CountDownLatch done = new CountDownLatch(1);
        ArrayDeque<Pending> pending = new ArrayDeque<>();
        worker.setAmHandler(ECHO, m -> {
            int index = m.header().getIntLE(m.header().readerIndex());
            if (index != expected[0]++ && error[0] == null) {
                error[0] = "message " + index + " arrived as number " + (expected[0] - 1);
            }
            Endpoint reply = m.replyEndpoint();
            if (reply == null) {
                error[0] = "message " + index + " came without a reply endpoint";
                return;
            }
            if (m.isRendezvous()) {
                rendezvous[0]++;
            }
            ByteBuf data = ByteBufAllocator.DEFAULT.directBuffer((int) Math.max(1, m.dataLength()));
            // Received after the handler returned (kept until then); echoed in arrival order once received.
            m.keep();
            Promise<Void> received = worker.eventLoop().newPromise();
            pending.add(new Pending(index, data, received, reply));
            worker.eventLoop().execute(() -> m.receiveData(data).addListener(f -> {
                m.release();
                if (f.isSuccess()) {
                    received.trySuccess(null);
                } else {
                    received.tryFailure(f.cause());
                }
                for (Pending p; (p = pending.peek()) != null && p.received.isDone(); ) {
                    pending.poll();
                    String bad = !p.received.isSuccess() ? "receiving message " + p.index + ": "
                            + p.received.cause() : MessagePlan.check(p.index, p.data);
                    if (bad != null) {
                        error[0] = error[0] == null ? bad : error[0];
                        p.data.release();
                    } else {
                        p.reply.amSend(ECHOED, Unpooled.buffer(4).writeIntLE(p.index), p.data);
                    }
                }
            }));
        });
        worker.setAmHandler(DONE, m -> done.countDown());
        System.out.println("ADDRESS " + worker.address().toHex());
        System.out.flush();
        String report;
        if (!done.await(240, TimeUnit.SECONDS)) {
            report = "no DONE message";
        } else {
            report = worker.eventLoop().submit(() -> error[0] != null ? error[0]
                    : "OK " + expected[0] + " rndv=" + rendezvous[0]).get();
        }
        System.out.println("REPORT " + report);
        System.out.flush();
        PeerExit.closeAndExit(worker, 10);
    }

    private record Pending(int index, ByteBuf data, Promise<Void> received, Endpoint reply) {
    }

    private AmPeer() {
    }
}
