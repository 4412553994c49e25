package io.nucx.examples.bench;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.nucx.transport.Buffers;
import io.nucx.transport.shm.SpscRing;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * shm's ring between two threads, as its two processes use it: the benchmark thread writes records of a header and
 * a payload from a direct buffer (its write returns once the record is in the ring, so when the ring is full it
 * waits for the reader); a second thread reads them and copies each payload into a buffer of the same alignment, as a
 * posted receive's. The score is nanoseconds a record: {@code size / score} is GB/s. Run: {@code bin/nucx-jmh
 * RingHandOff} (BENCHMARKS.md). It uses only the ring's and {@link Buffers}' public methods, so an older build's jars
 * run it too.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Threads(1) // the ring has one producer
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "-Dio.netty.leakDetection.level=disabled"})
public class RingHandOffBenchmark {

    @Param({"65536"})
    int size;

    /** Where the payload begins past a 64-byte line in both buffers. */
    @Param({"0", "8"})
    int offset;

    /** The record's header bytes (a frame's: 16 for an eager fragment). */
    @Param({"16"})
    int header;

    private Path file;
    private SpscRing producer;
    private SpscRing consumer;
    private ByteBuf source;
    private ByteBuf headerBytes;
    private ByteBuf sink;
    private Thread reader;
    private volatile boolean stop;
    /** What stopped the reader, if it failed: the writer then stops waiting for it. */
    private volatile Throwable readerFailed;

    @Setup(Level.Trial)
    public void setUp() throws IOException {
        file = Path.of("/dev/shm", "nucx-ring-bench-" + ProcessHandle.current().pid());
        producer = SpscRing.create(file, 4 << 20);
        consumer = SpscRing.open(file);
        source = Unpooled.directBuffer(size + 128);
        int at = lineOffset(source) + offset;
        source.writerIndex(at + size).readerIndex(at);
        sink = Unpooled.directBuffer(size + 128);
        ByteBuf into = sink.slice(lineOffset(sink) + offset, size);
        headerBytes = Unpooled.directBuffer(header).writeZero(header);
        int skip = header;
        reader = new Thread(() -> {
            try {
                while (!stop) {
                    consumer.read((type, ring, recordAt, length) -> Buffers.copy(ring, recordAt + skip, into, 0,
                            length - skip), 64);
                }
            } catch (Throwable t) {
                readerFailed = t;
            }
        }, "ring-reader");
        reader.setDaemon(true);
        reader.start();
    }

    /** Bytes from {@code b}'s start to its first 64-byte line. */
    private static int lineOffset(ByteBuf b) {
        return (int) (-b.memoryAddress() & 63);
    }

    @TearDown(Level.Trial)
    public void tearDown() throws Exception {
        stop = true;
        reader.join(5000);
        if (reader.isAlive()) {
            throw new IllegalStateException("the ring's reader did not stop: its rings stay mapped");
        }
        producer.close();
        consumer.close();
        Files.deleteIfExists(file);
        source.release();
        sink.release();
        headerBytes.release();
    }

    @Benchmark
    public void record() {
        while (!producer.write(1, headerBytes, source)) {
            if (readerFailed != null) {
                throw new IllegalStateException("the ring's reader failed", readerFailed);
            }
            Thread.onSpinWait();
        }
    }
}
