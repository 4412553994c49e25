package io.nucx.it;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.nucx.Endpoint;
import io.nucx.NucxBootstrap;
import io.nucx.Worker;
import io.nucx.WorkerAddress;
import io.nucx.protocol.tag.RndvProtocols;
import io.nucx.transport.cma.Cma;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.ArrayDeque;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Active messages between two JVM processes over tcp, shm, and shm with cma (rendezvous by GET and by PUT between the
 * processes): this process sends {@link MessagePlan}'s messages (0 B to 4 MiB, eager and rendezvous) with a reply
 * endpoint asked for to an {@link AmPeer}, which receives each into its own buffer, checks it and its order, and
 * echoes it back on the reply endpoint; the echoes are checked here in order too.
 */
@Timeout(300)
class TwoProcessAmTest {

    static final int COUNT = 1_200;
    static final int WINDOW = 32;

    @RegisterExtension
    final OpenedResources opened = new OpenedResources();

    /** {@code scheme}: NUCX_RNDV_SCHEME on both sides ("-": the default); with cma, GET or PUT between the processes. */
    @ParameterizedTest(name = "{0} {1}")
    @CsvSource({"tcp, -", "shm, -", "'shm,cma', get_zcopy", "'shm,cma', put_zcopy"})
    void messagesAreEchoedIntactAndInOrder(String tls, String scheme) throws Exception {
        if (tls.contains("cma")) {
            assumeTrue(Cma.availability().isAvailable(), () -> Cma.availability().reason());
        }
        String rndvScheme = scheme.equals("-") ? "auto" : scheme;
        // With cma, a copy rate below cma's makes the ring dearer, so the rendezvous goes by the scheme's RMA (at the
        // rate measured at start the ring may carry every message).
        String copyRate = tls.contains("cma") ? "1g" : "auto";
        // tcp lanes that do not place payloads (io_uring) send up to about 8 MB eagerly, as is cheaper there: the
        // 1 MiB and 4 MiB messages go by rendezvous because the threshold says so.
        String rndvThresh = tls.equals("tcp") ? "1m" : "auto";
        PeerProcess peer = opened.peer(PeerProcess.start(AmPeer.class, Map.of("NUCX_TLS", tls,
                "NUCX_RNDV_SCHEME", rndvScheme, "NUCX_SHM_COPY_BW", copyRate, "NUCX_RNDV_THRESH", rndvThresh)));
        WorkerAddress peerAddress = WorkerAddress.fromHex(peer.awaitLine("ADDRESS"));
        Worker worker = opened.worker(new NucxBootstrap().name("am-sender").config("TLS", tls)
                .config("RNDV_SCHEME", rndvScheme).config("SHM_COPY_BW", copyRate).config("RNDV_THRESH", rndvThresh)
                .start());
        BlockingQueue<String> echoes = new LinkedBlockingQueue<>();
        int[] next = {0};
        worker.setAmHandler(AmPeer.ECHOED, m -> {
            int index = m.header().getIntLE(m.header().readerIndex());
            String bad = index != next[0]++ ? "echo " + index + " arrived as number " + (next[0] - 1) : null;
            // Native memory: with NUCX_RNDV_SCHEME=put_zcopy the peer writes the echo straight into it.
            ByteBuf data = ByteBufAllocator.DEFAULT.directBuffer((int) Math.max(1, m.dataLength()));
            m.receiveData(data).addListener(f -> {
                String check = !f.isSuccess() ? "receiving echo " + index + ": " + f.cause()
                        : MessagePlan.check(index, data);
                data.release();
                echoes.add(bad != null ? bad : check != null ? check : "ok");
            });
        });
        Endpoint ep = worker.connect(peerAddress);
        ArrayDeque<ChannelFuture> inFlight = new ArrayDeque<>();
        for (int i = 0; i < COUNT; i++) {
            ByteBuf data = i % 2 == 0 ? MessagePlan.directContent(i, MessagePlan.size(i)) : MessagePlan.content(i);
            inFlight.add(ep.amSend(AmPeer.ECHO, Unpooled.buffer(4).writeIntLE(i), data, true));
            if (inFlight.size() > WINDOW) {
                ChannelFuture f = inFlight.poll();
                assertTrue(f.await(60, TimeUnit.SECONDS), "send timed out");
                assertTrue(f.isSuccess(), () -> "send failed: " + f.cause() + "\n" + peer.stderr());
            }
        }
        for (ChannelFuture f : inFlight) {
            assertTrue(f.await(60, TimeUnit.SECONDS) && f.isSuccess(), () -> "send failed: " + f.cause());
        }
        for (int i = 0; i < COUNT; i++) {
            String e = echoes.poll(120, TimeUnit.SECONDS);
            assertNotNull(e, "echo " + i + " did not come back\n" + peer.stderr());
            assertEquals("ok", e);
        }
        assertNull(echoes.poll(0, TimeUnit.SECONDS));
        ep.amSend(AmPeer.DONE, Unpooled.EMPTY_BUFFER, Unpooled.EMPTY_BUFFER).sync();
        String report = peer.awaitLine("REPORT");
        assertTrue(report.matches("OK " + COUNT + " rndv=[1-9][0-9]*"), () -> "peer reports: " + report + "\n"
                + peer.stderr());
        assertEquals(0, peer.waitFor(60), () -> "peer exit code; stderr:\n" + peer.stderr());
        if (tls.contains("cma")) { // the echoes' rendezvous data came by the scheme's RMA, into this side's buffers
            String counter = scheme.equals("get_zcopy") ? RndvProtocols.RECV_GET_COUNTER
                    : RndvProtocols.RECV_PUT_COUNTER;
            assertTrue(worker.counters().count(counter) > 0, () -> counter + ": " + worker.counters().snapshot());
        }
    }
}
