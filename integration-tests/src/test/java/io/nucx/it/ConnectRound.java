package io.nucx.it;

import io.netty.channel.ChannelFuture;
import io.netty.util.concurrent.Future;
import io.nucx.ConnectionResetException;
import io.nucx.Endpoint;
import io.nucx.Worker;
import io.nucx.WorkerAddress;
import io.nucx.protocol.tag.TagMessage;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * One round of a connect test, run the same way by both processes: connect to the peer, write messages before,
 * during and after wireup (eager, rendezvous with NUCX_RNDV_THRESH=1k, synchronous), and receive the peer's,
 * checking that message i of the round is the i-th to arrive, byte for byte (receives posted for one tag complete
 * in arrival order, so a lost, duplicated or reordered message shows).
 */
final class ConnectRound {

    /** Sizes of the messages each side sends per round; index 2 and 5 are synchronous sends. */
    static final int[] SIZES = {10, 5000, 64, 100, 3000, 20};

    private final Endpoint endpoint;
    private final String error;

    private ConnectRound(Endpoint endpoint, String error) {
        this.endpoint = endpoint;
        this.error = error;
    }

    Endpoint endpoint() {
        return endpoint;
    }

    /** Null when everything arrived intact and in order; otherwise what went wrong. */
    String error() {
        return error;
    }

    private static long tag(int round, int side) {
        return ((long) round << 8) | side;
    }

    private static int index(int round, int side, int i) {
        return (round * 2 + side) * SIZES.length + i;
    }

    /** Runs round {@code round} as side {@code me} (0 or 1) against the other side. */
    static ConnectRound run(Worker w, WorkerAddress peer, int round, int me) throws Exception {
        int other = 1 - me;
        List<Future<TagMessage>> recvs = new ArrayList<>();
        for (int i = 0; i < SIZES.length; i++) {
            recvs.add(w.tagRecv(tag(round, other), -1L));
        }
        Endpoint ep = w.connect(peer);
        List<ChannelFuture> sends = new ArrayList<>();
        for (int i = 0; i < SIZES.length; i++) {
            if (i == 3) {
                Thread.yield(); // "during": the loop is wiring up while we go on writing
            }
            if (i == 4 && !(ep.wireupFuture().await(30, TimeUnit.SECONDS) && ep.wireupFuture().isSuccess())) {
                return new ConnectRound(ep, "round " + round + ": wireup " + ep.wireupFuture().cause());
            }
            var content = MessagePlan.content(index(round, me, i), SIZES[i]);
            sends.add(i % 3 == 2 ? ep.tagSendSync(tag(round, me), content) : ep.tagSend(tag(round, me), content));
        }
        for (int i = 0; i < sends.size(); i++) {
            ChannelFuture f = sends.get(i);
            if (!f.await(30, TimeUnit.SECONDS) || !f.isSuccess()) {
                return new ConnectRound(ep, "round " + round + ": send " + i + ": " + f.cause());
            }
        }
        for (int i = 0; i < recvs.size(); i++) {
            Future<TagMessage> r = recvs.get(i);
            if (!r.await(30, TimeUnit.SECONDS) || !r.isSuccess()) {
                return new ConnectRound(ep, "round " + round + ": receive " + i + ": " + r.cause());
            }
            TagMessage m = r.getNow();
            try {
                String bad = MessagePlan.check(index(round, other, i), SIZES[i], m.content());
                if (bad != null) {
                    return new ConnectRound(ep, "round " + round + ": message " + i + " (in arrival order): " + bad);
                }
            } finally {
                m.release();
            }
        }
        return new ConnectRound(ep, null);
    }

    /** Waits (bounded) until {@code w} has no endpoint left; false if some remain after 20 s. */
    static boolean awaitNoEndpoints(Worker w) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!w.endpoints().isEmpty()) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            Thread.sleep(1);
        }
        return true;
    }

    /** A close that ended without failure, or with the peer's own close (both sides closed at once). */
    static String closeOutcome(Endpoint ep) throws InterruptedException {
        if (!ep.closeFuture().await(20, TimeUnit.SECONDS)) {
            return "not closed in 20 s";
        }
        Throwable cause = ep.errorFuture().cause();
        if (cause == null || (cause instanceof ConnectionResetException
                && cause.getMessage().contains("closed by its owner"))) {
            return null;
        }
        return cause.toString();
    }
}
