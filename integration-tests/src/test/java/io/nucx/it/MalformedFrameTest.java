package io.nucx.it;

import io.netty.buffer.Unpooled;
import io.nucx.Endpoint;
import io.nucx.NucxBootstrap;
import io.nucx.Worker;
import io.nucx.WorkerAddress;
import io.nucx.protocol.tag.TagMessage;
import io.nucx.transport.tcp.TcpAddresses;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Raw bytes thrown at a worker's tcp iface over a real socket: each bad input closes that connection, records an
 * error that says what was wrong, and leaves the worker and its other endpoint working.
 */
@Timeout(120)
class MalformedFrameTest {

    /** Name, bytes to send, whether to half-close after them, words the error must contain. */
    static Stream<Arguments> cases() {
        return Engines.all().flatMap(engine -> Stream.of(
                Arguments.of(engine, "garbage", bytes(0, 0, 0, 0, 1, 2, 3, 4), false, "am id 0"),
                Arguments.of(engine, "oversized payload", frame(2, 8, 0x7fff_ffff), false,
                        "payload length 2147483647 exceeds limit"),
                Arguments.of(engine, "oversized header", frame(2, 9000, 0), false, "header length 9000 exceeds limit"),
                Arguments.of(engine, "truncated then closed", frame(2, 8, 100), true, "middle of a frame"),
                Arguments.of(engine, "unknown am id", frame(200, 0, 0), false, "unknown active message id 200"),
                Arguments.of(engine, "eager before wireup", frameWithBody(2, 8, 0), false, "before the wireup REQUEST")));
    }

    private static byte[] bytes(int... v) {
        byte[] b = new byte[v.length];
        for (int i = 0; i < v.length; i++) {
            b[i] = (byte) v[i];
        }
        return b;
    }

    /** A frame prefix only: am id, flags, header length, payload length. */
    private static byte[] frame(int amId, int headerLength, long payloadLength) {
        return ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).put((byte) amId).put((byte) 0)
                .putShort((short) headerLength).putInt((int) payloadLength).array();
    }

    private static byte[] frameWithBody(int amId, int headerLength, int payloadLength) {
        ByteBuffer b = ByteBuffer.allocate(8 + headerLength + payloadLength).order(ByteOrder.LITTLE_ENDIAN);
        b.put(frame(amId, headerLength, payloadLength));
        return b.array();
    }

    @ParameterizedTest(name = "{0}: {1}")
    @MethodSource("cases")
    void badInputClosesOnlyThatConnection(String engine, String name, byte[] input, boolean halfClose,
                                          String expected) throws Exception {
        Engines.assumeAvailable(engine);
        Worker target = new NucxBootstrap().name("target").config("TLS", "tcp").config("TCP_IO", engine).start();
        Worker healthy = new NucxBootstrap().name("healthy").config("TLS", "tcp").config("TCP_IO", engine).start();
        try {
            Endpoint ep = healthy.connect(target.address());
            exchange(target, ep, 1);

            InetSocketAddress iface = tcpIface(target.address());
            try (Socket raw = new Socket()) {
                raw.connect(iface, 5000);
                raw.setSoTimeout(10_000);
                OutputStream out = raw.getOutputStream();
                out.write(input);
                out.flush();
                if (halfClose) {
                    raw.shutdownOutput();
                }
                InputStream in = raw.getInputStream();
                try {
                    assertEquals(-1, in.read(), "the worker must close the bad connection");
                } catch (SocketTimeoutException e) {
                    fail("the worker kept the connection open after " + name);
                } catch (SocketException reset) {
                    // closed with RST: also closed
                }
            }
            List<Throwable> failures = awaitFailure(target);
            assertTrue(failures.stream().anyMatch(t -> String.valueOf(t.getMessage()).contains(expected)
                            || String.valueOf(t.getCause()).contains(expected)),
                    () -> "no lane failure mentioning '" + expected + "': " + failures);
            exchange(target, ep, 2); // the worker and its other endpoint still work
            assertTrue(ep.isActive());
        } finally {
            healthy.close().get(10, TimeUnit.SECONDS);
            target.close().get(10, TimeUnit.SECONDS);
        }
    }

    private static List<Throwable> awaitFailure(Worker w) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (w.laneFailures().isEmpty() && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        return w.laneFailures();
    }

    private static void exchange(Worker receiver, Endpoint ep, long tag) throws Exception {
        ep.tagSend(tag, Unpooled.wrappedBuffer(new byte[] {1, 2, 3})).sync();
        TagMessage m = receiver.tagRecv(tag, -1L).get(10, TimeUnit.SECONDS);
        try {
            assertEquals(3, m.content().readableBytes());
        } finally {
            m.release();
        }
    }

    private static InetSocketAddress tcpIface(WorkerAddress a) {
        WorkerAddress.Entry e = a.entries().stream().filter(x -> x.transport().equals("tcp")).findFirst().orElseThrow();
        return TcpAddresses.socketAddress(e.deviceAddress(), e.ifaceAddress());
    }
}
