package io.nucx.transport.self;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.nucx.transport.AbstractLaneChannel;
import io.nucx.transport.AmFrame;
import io.nucx.transport.Iface;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Self copies a frame whose payload is at most {@link SelfChannel#COPY_MAX} bytes into the reader's ring as a record
 * (and, when the ring is full, hands over a copy), so its buffers are free once its write completes, as the iface's
 * {@code amCopyMax} says; a larger payload is handed over as it is. Two real loops, a reader that does not read until
 * every write is done, frames of every header length, flag and size case, written at once and the ordinary way.
 */
@Timeout(60)
class SelfFrameRecordTest {

    private static final int[] SIZES = {0, 1, 7, 8, 63, 500, SelfChannel.COPY_MAX, SelfChannel.COPY_MAX + 1, 4096};

    @RegisterExtension
    final SelfLoops loops = new SelfLoops();

    /** Keeps what it reads, as it arrived (amId, flags, header, payload bytes, payload address). */
    private static final class Reader extends PausedReader {
        final List<Sent> seen = new ArrayList<>();
        final List<Long> payloadAddresses = new ArrayList<>();

        @Override
        void read(AmFrame f) {
            seen.add(new Sent(f.amId(), f.flags(), bytes(f.header()), bytes(f.payload())));
            payloadAddresses.add(f.payload().hasMemoryAddress() ? f.payload().memoryAddress() : 0);
        }
    }

    /** A frame's contents, compared by value. */
    private record Sent(int amId, int flags, byte[] header, byte[] payload) {
        @Override
        public boolean equals(Object o) {
            return o instanceof Sent s && amId == s.amId && flags == s.flags && Arrays.equals(header, s.header)
                    && Arrays.equals(payload, s.payload);
        }

        @Override
        public int hashCode() {
            return 31 * amId + Arrays.hashCode(payload);
        }

        @Override
        public String toString() {
            return "am " + amId + " flags " + flags + " header " + header.length + ":" + Arrays.hashCode(header)
                    + " payload " + payload.length + ":" + Arrays.hashCode(payload);
        }
    }

    private static byte[] bytes(ByteBuf b) {
        byte[] a = new byte[b.readableBytes()];
        b.getBytes(b.readerIndex(), a);
        return a;
    }

    private static byte[] pattern(int seed, int length) {
        byte[] a = new byte[length];
        for (int i = 0; i < length; i++) {
            a[i] = (byte) (seed * 31 + i * 7);
        }
        return a;
    }

    @Test
    void aSmallPayloadIsFreeOnceItsWriteCompletesAndALargeOneIsHandedOver() throws Exception {
        Reader reader = new Reader();
        Iface a = loops.open(loops.loopA, ChannelInboundHandlerAdapter::new, Map.of());
        Iface b = loops.open(loops.loopB, () -> reader, Map.of());
        AbstractLaneChannel writer = (AbstractLaneChannel) a.connect(b.deviceAddress(), b.ifaceAddress(),
                new ChannelInboundHandlerAdapter()).sync().channel();
        Channel readerChannel = reader.channel.get(10, TimeUnit.SECONDS);
        readerChannel.eventLoop().submit(() -> { }).sync();

        int n = 600; // about 200 KiB of small payloads: more than the ring holds, so copies are handed over too
        List<Sent> sent = new ArrayList<>();
        List<byte[]> smallArrays = new ArrayList<>(); // the writer's own memory of each small payload and header
        List<ChannelFuture> smallWrites = new ArrayList<>();
        List<Long> largeAddresses = new ArrayList<>();
        int[] atOnce = new int[1];
        writer.eventLoop().submit(() -> {
            for (int i = 0; i < n; i++) {
                int size = SIZES[i % SIZES.length];
                int amId = (i * 37) & 0xff;
                int flags = i & 0x7f;
                byte[] header = pattern(i + 1000, 8 * (1 + i % 8)); // 8..64 bytes: self's maxHeader
                byte[] payload = pattern(i, size);
                sent.add(new Sent(amId, flags, header.clone(), payload.clone()));
                ByteBuf p;
                if (size > SelfChannel.COPY_MAX) {
                    p = Unpooled.directBuffer(size).writeBytes(payload);
                    largeAddresses.add(p.memoryAddress() + p.readerIndex());
                } else {
                    p = Unpooled.wrappedBuffer(payload);
                    smallArrays.add(header);
                    smallArrays.add(payload);
                }
                AmFrame f = AmFrame.of(amId, flags, Unpooled.wrappedBuffer(header), p);
                if (i % 2 == 0 && writer.writeNow(f)) {
                    atOnce[0]++;
                    if (size <= SelfChannel.COPY_MAX) {
                        smallWrites.add(writer.newSucceededFuture());
                    }
                } else {
                    ChannelFuture w = writer.writeAndFlush(f);
                    if (size <= SelfChannel.COPY_MAX) {
                        smallWrites.add(w);
                    }
                }
            }
        }).get(30, TimeUnit.SECONDS);
        assertTrue(atOnce[0] > 0, "no frame was written at once");

        // The reader has read nothing, yet every small frame's write completed: its bytes were copied.
        for (ChannelFuture w : smallWrites) {
            assertTrue(w.await(10, TimeUnit.SECONDS) && w.isSuccess(), () -> "write failed: " + w.cause());
        }
        assertTrue(readerChannel.eventLoop().submit(() -> reader.seen.isEmpty()).get(), "read with auto-read off");
        assertTrue(((SelfChannel) readerChannel).queuedBytes() > 0, "the ring never filled: no copy handed over");
        for (byte[] mine : smallArrays) {
            Arrays.fill(mine, (byte) 0x55); // the writer reuses its memory: what arrives must not change
        }

        reader.expected = new CountDownLatch(n);
        readerChannel.config().setAutoRead(true);
        assertTrue(reader.expected.await(30, TimeUnit.SECONDS), "frames missing: " + reader.expected.getCount());
        assertNull(reader.failure);
        List<Sent> seen = readerChannel.eventLoop().submit(() -> List.copyOf(reader.seen)).get();
        List<Long> addresses = readerChannel.eventLoop().submit(() -> List.copyOf(reader.payloadAddresses)).get();
        assertEquals(sent.size(), seen.size());
        int large = 0;
        for (int i = 0; i < n; i++) {
            assertEquals(sent.get(i), seen.get(i), "frame " + i);
            if (sent.get(i).payload().length > SelfChannel.COPY_MAX) {
                assertEquals(largeAddresses.get(large++), addresses.get(i), "frame " + i + " was copied");
            }
        }
        assertEquals(0, ((SelfChannel) readerChannel).queuedBytes(), "every queued byte accounted for");
    }
}
