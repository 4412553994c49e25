package io.nucx.transport.self;

import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoopGroup;
import io.nucx.transport.AmFrame;
import io.nucx.transport.Iface;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What only self does about backpressure, on a pair over two loops whose reader does not read: the reader's queue is
 * bounded by its capacity, and frames held by the writer weigh their bytes toward its water mark. (That the writer
 * turns unwritable and nothing is lost is {@link SelfLaneTest}'s.)
 */
@Timeout(30)
class SelfChannelBackpressureTest {

    private static final int QUEUE_BYTES = 8 * 1024;
    /** Above {@link SelfChannel#COPY_MAX}: these frames are handed over, and counted by the queue's bytes. */
    private static final int PAYLOAD = 2048;
    private static final int MAX_WRITES = 10_000;

    @RegisterExtension
    final SelfLoops loops = new SelfLoops();

    /** Records the sequence numbers it reads and checks each payload's length. */
    private static final class Reader extends PausedReader {
        @Override
        void read(AmFrame f) {
            super.read(f);
            if (f.payload().readableBytes() != PAYLOAD) {
                throw new AssertionError("payload of " + f.payload().readableBytes() + " bytes");
            }
        }
    }

    private Iface open(EventLoopGroup group, ChannelHandler accepted) {
        return loops.open(group, () -> accepted, Map.of("SELF_QUEUE_BYTES", "8k"));
    }

    private static AmFrame frame(long seq) {
        return AmFrame.of(1, 0, Unpooled.buffer(8).writeLongLE(seq), Unpooled.wrappedBuffer(new byte[PAYLOAD]));
    }

    /** Runs nothing on {@code ch}'s loop, so every task queued there before has run when this returns. */
    private static void drain(Channel ch) throws Exception {
        ch.eventLoop().submit(() -> { }).sync();
    }

    private static long completedCount(List<ChannelFuture> writes) {
        return writes.stream().filter(ChannelFuture::isDone).count();
    }

    private record Pair(Channel writer, Reader reader, Channel readerChannel) {
    }

    private Pair connect() throws Exception {
        Reader reader = new Reader();
        Iface a = open(loops.loopA, new ChannelInboundHandlerAdapter());
        Iface b = open(loops.loopB, reader);
        ChannelFuture connected = a.connect(b.deviceAddress(), b.ifaceAddress(), new ChannelInboundHandlerAdapter());
        Channel writer = connected.sync().channel();
        Channel readerChannel = reader.channel.get(10, TimeUnit.SECONDS);
        drain(readerChannel);
        assertTrue(writer.isActive());
        assertTrue(readerChannel.isActive());
        assertFalse(readerChannel.config().isAutoRead());
        return new Pair(writer, reader, readerChannel);
    }

    @Test
    void theReadersQueueHoldsNoMoreThanItsCapacityWhileItDoesNotRead() throws Exception {
        Pair p = connect();
        List<ChannelFuture> writes = new ArrayList<>();
        while (p.writer().isWritable() && writes.size() < MAX_WRITES) {
            writes.add(p.writer().writeAndFlush(frame(writes.size())));
        }
        assertFalse(p.writer().isWritable(), "writer still writable after " + writes.size() + " frames");
        drain(p.writer());
        drain(p.readerChannel());
        drain(p.writer());

        long completed = completedCount(writes);
        assertTrue(completed >= 1, "the first frame always fits the empty queue");
        assertTrue(completed * PAYLOAD <= QUEUE_BYTES, completed + " frames completed although the peer's queue holds "
                + QUEUE_BYTES + " bytes");
        assertTrue(completed < writes.size(), "far fewer frames completed than written");
        for (int i = 0; i < completed; i++) {
            assertTrue(writes.get(i).isSuccess(), "writes complete in order");
        }
        assertTrue(((SelfChannel) p.readerChannel()).queuedBytes() <= QUEUE_BYTES + 64 + PAYLOAD + 8);
        assertTrue(readOnLoop(p).isEmpty(), "nothing read with auto-read off");

        p.reader().expected = new CountDownLatch(writes.size());
        p.readerChannel().config().setAutoRead(true);
        assertTrue(p.reader().expected.await(20, TimeUnit.SECONDS),
                "frames still missing: " + p.reader().expected.getCount());
        for (ChannelFuture w : writes) {
            assertTrue(w.await(10, TimeUnit.SECONDS) && w.isSuccess(), () -> "write failed: " + w.cause());
        }
        assertEquals(null, p.reader().failure);
        p.writer().close().sync();
    }

    private static List<Long> readOnLoop(Pair p) throws Exception {
        return p.readerChannel().eventLoop().submit(() -> List.copyOf(p.reader().sequence)).get();
    }

    /**
     * The water mark is a byte count: frames held in the writer's outbound buffer must weigh their bytes, so with
     * the default 64 KiB high water mark a writer of 1 KiB frames becomes unwritable after roughly the peer's queue
     * plus 64 KiB, not after hundreds of frames.
     */
    @Test
    void framesHeldByTheWriterCountTheirBytesTowardItsWaterMark() throws Exception {
        Pair p = connect();
        int high = p.writer().config().getWriteBufferHighWaterMark();
        List<ChannelFuture> writes = new ArrayList<>();
        while (p.writer().isWritable() && writes.size() < MAX_WRITES) {
            writes.add(p.writer().writeAndFlush(frame(writes.size())));
        }
        long bufferedBytes = (long) writes.size() * (PAYLOAD + 8);
        long allowed = QUEUE_BYTES + high + 2L * (PAYLOAD + 8);
        try {
            assertFalse(p.writer().isWritable());
            assertTrue(bufferedBytes <= allowed, "writer became unwritable only after " + writes.size()
                    + " frames (" + bufferedBytes + " bytes); high water mark " + high + " + queue " + QUEUE_BYTES
                    + " allow about " + allowed);
        } finally {
            p.reader().expected = new CountDownLatch(writes.size());
            p.readerChannel().config().setAutoRead(true);
            assertTrue(p.reader().expected.await(20, TimeUnit.SECONDS));
            for (ChannelFuture w : writes) {
                w.await(10, TimeUnit.SECONDS);
            }
            p.writer().close().sync();
        }
    }
}
