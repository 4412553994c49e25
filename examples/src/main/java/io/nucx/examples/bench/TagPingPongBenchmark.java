package io.nucx.examples.bench;

import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.nucx.examples.perf.InProcessPingPong;
import io.nucx.transport.shm.ShmIoHandler;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.util.concurrent.TimeUnit;

/**
 * Tagged 8-byte ping-pong between two workers of this JVM over one transport, both sides on their own event loops
 * (busy-polling), as perftest's tag_lat runs it: one operation is one round trip (a receive posted, a send, the reply).
 * Run with the GC profiler for what each round trip allocates on both sides, e.g.
 * {@code bin/nucx-jmh TagPingPong -prof gc}: {@code gc.alloc.rate.norm} is bytes per round trip, both workers'
 * loops together (JMH counts every thread). Times are meaningless on a loaded 2-core machine (two spinning loops and
 * JMH's own thread); allocation is not. Leak detection is off in the fork, as in production it samples.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 5, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "-Dio.netty.leakDetection.level=disabled"})
public class TagPingPongBenchmark {

    /** Round trips per benchmark invocation, run on the loops without the benchmark thread in between. */
    static final int ROUND_TRIPS = 10_000;

    @Param({"self", "shm", "tcp"})
    String transport;

    @Param({"future", "reused", "short"})
    String api;

    /**
     * "two": each worker on a loop of its own, as perftest runs them. "one": both on one busy-polling loop, so a round
     * trip is the two sides' send and receive work on one thread: CPU cost per message, free of the core-to-core
     * latency (and of this machine's two speeds of it), which times two loops cannot separate from it.
     */
    @Param({"two"})
    String loops;

    private InProcessPingPong pingPong;
    private EventLoopGroup shared;

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        if (loops.equals("one")) {
            shared = new MultiThreadIoEventLoopGroup(1, ShmIoHandler.newFactory(
                    NioIoHandler.newFactory(), Long.MAX_VALUE));
        } else if (!loops.equals("two")) {
            throw new IllegalArgumentException("loops: one or two, not " + loops);
        }
        pingPong = InProcessPingPong.start(transport, 8, InProcessPingPong.Api.of(api), true, shared);
    }

    @TearDown(Level.Trial)
    public void tearDown() throws Exception {
        pingPong.close();
        if (shared != null) {
            shared.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }

    @Benchmark
    @OperationsPerInvocation(ROUND_TRIPS)
    public long roundTrip() throws Exception {
        return pingPong.run(ROUND_TRIPS);
    }
}
