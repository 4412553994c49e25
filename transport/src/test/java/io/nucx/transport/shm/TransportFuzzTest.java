package io.nucx.transport.shm;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.CorruptedFrameException;
import io.netty.handler.codec.DecoderException;
import io.netty.handler.codec.TooLongFrameException;
import io.nucx.transport.AmFrame;
import io.nucx.transport.HostId;
import io.nucx.transport.cma.CmaChannel;
import io.nucx.transport.rma.InvalidRemoteKeyException;
import io.nucx.transport.rma.RmaLane;
import io.nucx.transport.tcp.AmFrameDecoder;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.TimeUnit;

/**
 * Coverage-guided fuzzing (Jazzer) of every transport decoder that reads another process's bytes: the tcp frame
 * decoder, the shm handshake, a ring whose record area and counters another process filled with anything, and the
 * RMA SPI's {@code unpackKey} (cma). Each may refuse its input only with the exception it documents; anything else, a
 * hang, an out-of-memory or a leak report (PARANOID) is a finding. In the suite each target runs its seed corpus
 * ({@code TransportFuzzTestInputs/}); {@code bin/fuzz TARGET MINUTES} fuzzes one for real.
 */
class TransportFuzzTest {

    private static final Path DIR;

    static {
        try {
            DIR = Files.createTempDirectory("nucx-fuzz");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @FuzzTest(maxDuration = "20s")
    void tcpFrames(byte[] stream) {
        EmbeddedChannel ch = new EmbeddedChannel(new AmFrameDecoder(64, 1 << 16));
        try {
            ch.writeInbound(Unpooled.wrappedBuffer(stream));
            ch.finish();
        } catch (DecoderException e) {
            if (!(e instanceof CorruptedFrameException) && !(e instanceof TooLongFrameException)) {
                throw e;
            }
        } finally {
            for (Object m; (m = ch.readInbound()) != null; ) {
                AmFrame f = (AmFrame) m;
                boolean bad = f.amId() == 0 || f.header().readableBytes() > 64 || f.payload().readableBytes() > 1 << 16;
                f.release();
                if (bad) {
                    throw new AssertionError("the decoder let a frame over its limits through");
                }
            }
            ch.finishAndReleaseAll();
        }
    }

    /** An acceptor's handshake fed anything; an odd first byte gets this host's id patched in, to go further. */
    @FuzzTest(maxDuration = "20s")
    void shmHandshake(byte[] data) {
        byte[] m = data.clone();
        if (m.length >= 18 && (m[0] & 1) == 1) {
            ByteBuffer.wrap(m, 10, 8).order(ByteOrder.LITTLE_ENDIAN).putLong(HostId.get());
        }
        boolean[] done = new boolean[1];
        EmbeddedChannel ch = new EmbeddedChannel(new ShmHandshake(false, DIR, new ShmAddress(ShmFiles.pid(), 1),
                1 << 16, TimeUnit.SECONDS.toNanos(10), r -> {
                    done[0] = true;
                    r.in().close();
                    r.out().close();
                }, cause -> { }));
        try {
            ch.writeInbound(Unpooled.wrappedBuffer(m));
        } finally {
            ch.finishAndReleaseAll();
        }
    }

    /**
     * A ring whose records and counters another process overwrote with {@code words}: reading it hands out only
     * records inside the ring, or refuses with {@link RingCorruptedException}.
     */
    @FuzzTest(maxDuration = "20s")
    void ringRecords(byte[] words) throws IOException {
        int capacity = 4096;
        Path file = DIR.resolve("nucx-" + ShmFiles.pid() + "-9-" + Thread.currentThread().threadId() + ".ring");
        Files.deleteIfExists(file);
        try (SpscRing ring = SpscRing.create(file, capacity)) {
            try (FileChannel fc = FileChannel.open(file, StandardOpenOption.WRITE)) {
                long room = RingDescriptor.fileLength(capacity) - RingDescriptor.HEADER_LENGTH;
                fc.write(ByteBuffer.wrap(words, 0, (int) Math.min(words.length, room)),
                        RingDescriptor.HEADER_LENGTH);
            }
            long[] seen = {0};
            for (int pass = 0; pass < 4; pass++) {
                try {
                    ring.read((type, segment, offset, length) -> {
                        if (length > ring.maxPayload()) {
                            throw new AssertionError("a record larger than the ring's largest payload");
                        }
                        seen[0] += length;
                        MemorySegment.copy(segment, offset, MemorySegment.ofArray(new byte[length]), 0, length);
                    }, 64);
                } catch (RingCorruptedException refused) {
                    return;
                }
            }
        } finally {
            Files.deleteIfExists(file);
        }
    }

    /** The RMA SPI's unpackKey (cma); an odd first byte gets this host and pid patched in, to go further. */
    @FuzzTest(maxDuration = "20s")
    void remoteKeys(byte[] packed) {
        byte[] k = packed.clone();
        int pid = (int) ShmFiles.pid();
        if (k.length >= 12 && (k[0] & 1) == 1) {
            ByteBuffer.wrap(k, 0, 12).order(ByteOrder.LITTLE_ENDIAN).putLong(HostId.get()).putInt(pid);
        }
        RmaLane lane = CmaChannel.toProcess(pid);
        ByteBuf buf = Unpooled.wrappedBuffer(k);
        try {
            lane.unpackKey(buf);
        } catch (InvalidRemoteKeyException refused) {
            // refused, naming what is wrong
        } finally {
            buf.release(); // the lane was never registered: nothing else to let go
        }
    }
}
