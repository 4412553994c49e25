package io.nucx.wireup;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.util.concurrent.Future;
import io.nucx.Endpoint;
import io.nucx.protocol.tag.TagMessage;
import io.nucx.transport.tcp.AmFrameDecoder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import static io.nucx.wireup.TestWorkers.assertPattern;
import static io.nucx.wireup.TestWorkers.assertReceived;
import static io.nucx.wireup.TestWorkers.pattern;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Short messages over tcp lanes go from the socket's read to where they are received as their parts (the decoder
 * hands the lane's handler the tag field and the payload where it lies in the read, as shm hands its ring records):
 * into posted receives, kept for receives posted later, active messages with and without a user header, on every
 * socket engine. Content and order are checked; the decoder's count says the route was taken.
 */
@Timeout(120)
class TcpShortFramesTest {

    @RegisterExtension
    final TestWorkers workers = new TestWorkers();

    private static long shortFrames(DefaultWorker w) throws Exception {
        Endpoint accepted = w.endpoints().iterator().next();
        AmFrameDecoder decoder = TestWorkers.impl(accepted).amLane().pipeline().get(AmFrameDecoder.class);
        return w.eventLoop().submit(decoder::shortFrames).get(10, TimeUnit.SECONDS);
    }

    @ParameterizedTest
    @ValueSource(strings = {"epoll", "nio", "io_uring"})
    void shortMessagesGoFromTheReadToTheirReceivers(String io) throws Exception {
        DefaultWorker a = workers.start("a", "TLS", "tcp", "TCP_IO", io);
        DefaultWorker b = workers.start("b", "TLS", "tcp", "TCP_IO", io);
        TestWorkers.Pair pair = TestWorkers.connected(a, b);
        Endpoint ab = pair.ab();
        long before = shortFrames(b);
        int n = 300;

        // Posted first, half into buffers of the user's: each arrives where it was asked to.
        List<Future<TagMessage>> posted = new ArrayList<>();
        List<ByteBuf> into = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            if (i % 2 == 0) {
                ByteBuf buffer = ByteBufAllocator.DEFAULT.directBuffer(64, 64);
                into.add(buffer);
                posted.add(b.tagRecv(i, -1L, buffer));
            } else {
                posted.add(b.tagRecv(i, -1L));
            }
        }
        for (int i = 0; i < n; i++) {
            ab.tagSend(i, pattern(i, i % 60));
        }
        ab.flush();
        for (int i = 0; i < n; i++) {
            assertReceived(posted.get(i), i, i % 60, 30);
        }
        for (ByteBuf buffer : into) {
            buffer.release();
        }

        // Sent before any receive: kept (copied out of the read), then taken in order.
        for (int i = 0; i < n; i++) {
            ab.tagSend(1_000_000 + i, pattern(1_000_000 + i, 1 + i % 500));
        }
        ab.flush();
        TestWorkers.awaitOnLoop(b, () -> b.unexpectedCount() == n, "all " + n + " unexpected messages");
        for (int i = 0; i < n; i++) {
            assertReceived(b.tagRecv(1_000_000 + i, -1L), 1_000_000 + i, 1 + i % 500, 30);
        }

        // Active messages, a user header on every other one.
        BlockingQueue<String> seen = new LinkedBlockingQueue<>();
        b.setAmHandler(3, m -> {
            byte[] header = new byte[m.header().readableBytes()];
            m.header().getBytes(m.header().readerIndex(), header);
            ByteBuf data = ByteBufAllocator.DEFAULT.heapBuffer((int) m.dataLength());
            m.receiveData(data);
            try {
                assertPattern(header.length == 0 ? 7 : header[0], (int) m.dataLength(), data);
                seen.add(header.length + "/" + m.dataLength());
            } catch (AssertionError e) {
                seen.add("bad data: " + e.getMessage());
            } finally {
                data.release();
            }
        });
        for (int i = 0; i < n; i++) {
            ByteBuf header = i % 2 == 0 ? Unpooled.EMPTY_BUFFER
                    : Unpooled.wrappedBuffer(new byte[] {(byte) (i % 100), 1, 2});
            ab.amSend(3, header, pattern(i % 2 == 0 ? 7 : i % 100, i % 200));
        }
        ab.flush();
        for (int i = 0; i < n; i++) {
            String s = seen.poll(30, TimeUnit.SECONDS);
            assertNotNull(s, "active message " + i);
            assertEquals((i % 2 == 0 ? 0 : 3) + "/" + (i % 200), s, "active message " + i);
        }

        long taken = shortFrames(b) - before;
        assertTrue(taken >= 2L * n, () -> "only " + taken + " of " + 3 * n + " short frames went in place");
    }
}
