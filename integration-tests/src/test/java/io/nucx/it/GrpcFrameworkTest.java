package io.nucx.it;

import io.grpc.ManagedChannel;
import io.grpc.stub.StreamObserver;
import io.netty.channel.EventLoopGroup;
import io.nucx.NucxChannel;
import io.nucx.NucxEventLoopGroup;
import io.nucx.examples.frameworks.Bodies;
import io.nucx.examples.frameworks.GrpcApp;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * gRPC-java over grpc-netty, run on nucx by the builders' {@code channelType} and event loop groups alone (the server
 * in another process), over shm and over tcp: unary calls of 0 B to 8 MiB, and a bidirectional stream of 200
 * messages of mixed sizes answered in order; every answer is the SHA-256 and the message, checked.
 */
@Timeout(300)
class GrpcFrameworkTest {

    static final int[] SIZES = {0, 1, 100, 16_384, 65_536, 1 << 20, 8 << 20, 7};

    @ParameterizedTest(name = "over {0}")
    @ValueSource(strings = {"shm,cma", "tcp"})
    void unaryAndBidirectionalStreamingCallsAreAnsweredIntact(String tls) throws Exception {
        try (FrameworkTransport t = FrameworkTransport.start("grpc", tls)) {
            EventLoopGroup group = new NucxEventLoopGroup(1);
            ManagedChannel channel = GrpcApp.client(group, NucxChannel.class,
                    new InetSocketAddress("127.0.0.1", t.port));
            try {
                for (int i = 0; i < SIZES.length; i++) {
                    byte[] m = Bodies.of(i, SIZES[i]);
                    assertArrayEquals(GrpcApp.answer(m), GrpcApp.unary(channel, m), "unary call " + i + " ("
                            + SIZES[i] + " B)");
                }
                int count = 200;
                List<byte[]> answers = Collections.synchronizedList(new ArrayList<>());
                AtomicReference<Throwable> failed = new AtomicReference<>();
                CountDownLatch done = new CountDownLatch(1);
                StreamObserver<byte[]> out = GrpcApp.chat(channel, new StreamObserver<>() {
                    @Override
                    public void onNext(byte[] a) {
                        answers.add(a);
                    }

                    @Override
                    public void onError(Throwable e) {
                        failed.set(e);
                        done.countDown();
                    }

                    @Override
                    public void onCompleted() {
                        done.countDown();
                    }
                });
                for (int i = 0; i < count; i++) {
                    out.onNext(Bodies.of(100 + i, size(i)));
                }
                out.onCompleted();
                assertTrue(done.await(120, TimeUnit.SECONDS), "the stream did not complete");
                assertNull(failed.get(), () -> "the stream failed: " + failed.get());
                assertEquals(count, answers.size());
                for (int i = 0; i < count; i++) {
                    assertArrayEquals(GrpcApp.answer(Bodies.of(100 + i, size(i))), answers.get(i),
                            "streamed answer " + i);
                }
            } finally {
                channel.shutdown().awaitTermination(30, TimeUnit.SECONDS);
                group.shutdownGracefully(0, 5, TimeUnit.SECONDS).sync();
            }
        }
    }

    private static int size(int i) {
        return i % 10 == 9 ? 300_000 : (i * 37) % 2000;
    }
}
