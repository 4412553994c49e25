package io.nucx.transport.self;

import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.nucx.transport.AmFrame;
import io.nucx.transport.Iface;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A self writer moves a bounded batch of messages per loop turn: a flush of more lets its loop run its I/O and timers
 * in between, and a loop shut down in between fails what is left rather than leave it waiting. Two plain loops; the
 * reader does not read until the test says, and its queue has room for every frame, so the writer never waits for it.
 */
@Timeout(30)
class SelfWriterTurnsTest {

    /** Under {@link SelfChannel#MAX_SLOTS} and far under the queue's bytes: a flush of them needs no room freed. */
    private static final int FRAMES = 2_000;
    private static final Map<String, String> ROOMY = Map.of("SELF_QUEUE_BYTES", "64m");

    @RegisterExtension
    final SelfLoops loops = new SelfLoops();

    private record Pair(Channel writer, PausedReader reader, Channel readerChannel) {
    }

    private Pair connect() throws Exception {
        PausedReader reader = new PausedReader();
        Iface a = loops.open(loops.loopA, ChannelInboundHandlerAdapter::new, ROOMY);
        Iface b = loops.open(loops.loopB, () -> reader, ROOMY);
        Channel writer = a.connect(b.deviceAddress(), b.ifaceAddress(), new ChannelInboundHandlerAdapter()).sync()
                .channel();
        return new Pair(writer, reader, reader.channel.get(10, TimeUnit.SECONDS));
    }

    /**
     * Writes {@link #FRAMES} numbered frames and flushes them once, then runs {@code after} with their writes, all in
     * one loop task.
     */
    private static List<ChannelFuture> flushAll(Channel writer, Consumer<List<ChannelFuture>> after)
            throws Exception {
        return writer.eventLoop().submit(() -> {
            List<ChannelFuture> writes = new ArrayList<>(FRAMES);
            for (int i = 0; i < FRAMES; i++) {
                writes.add(writer.write(AmFrame.of(1, 0, Unpooled.buffer(8).writeLongLE(i), Unpooled.EMPTY_BUFFER)));
            }
            writer.flush();
            after.accept(writes);
            return writes;
        }).get(10, TimeUnit.SECONDS);
    }

    private static long done(List<ChannelFuture> writes) {
        return writes.stream().filter(ChannelFuture::isDone).count();
    }

    @Test
    void aLongFlushLetsTheWritersLoopRunItsTimersBetweenBatches() throws Exception {
        Pair p = connect();
        CompletableFuture<Long> writtenWhenTimerRan = new CompletableFuture<>();
        // The timer is handed the writes: it may run before this thread has flushAll's result.
        List<ChannelFuture> writes = flushAll(p.writer(), ws -> p.writer().eventLoop().schedule(
                () -> writtenWhenTimerRan.complete(done(ws)), 0, TimeUnit.NANOSECONDS));
        long written = writtenWhenTimerRan.get(10, TimeUnit.SECONDS);
        assertTrue(written < FRAMES, "a timer set after a flush of " + FRAMES + " frames waited for all of them");
        assertTrue(written > 0, "the flush moved its first batch at once");

        p.reader().expected = new CountDownLatch(FRAMES);
        p.readerChannel().eventLoop().execute(() -> p.readerChannel().config().setAutoRead(true));
        assertTrue(p.reader().expected.await(10, TimeUnit.SECONDS), "every frame arrives");
        for (ChannelFuture w : writes) {
            assertTrue(w.isSuccess(), () -> "write failed: " + w.cause());
        }
        assertNull(p.reader().failure);
        List<Long> want = new ArrayList<>(FRAMES);
        for (long i = 0; i < FRAMES; i++) {
            want.add(i);
        }
        p.readerChannel().eventLoop().submit(() -> assertEquals(want, p.reader().sequence, "in order")).sync();
    }

    @Test
    void writesLeftWhenTheWritersLoopShutsDownFailSayingSoAndTheLaneCloses() throws Exception {
        Pair p = connect();
        List<ChannelFuture> writes = flushAll(p.writer(),
                ws -> loops.loopA.shutdownGracefully(0, 1, TimeUnit.SECONDS));
        ChannelFuture last = writes.get(FRAMES - 1);
        assertTrue(last.await(10, TimeUnit.SECONDS), "the last write never ended (" + done(writes) + " of "
                + FRAMES + " did)");
        assertFalse(last.isSuccess(), "the last write succeeded on a loop shut down before its batch");
        assertInstanceOf(RejectedExecutionException.class, last.cause());
        assertTrue(last.cause().getMessage().contains("event loop shut down"), last.cause().getMessage());
        assertTrue(writes.get(0).isSuccess(), "the first batch was moved");
        assertTrue(p.writer().closeFuture().await(10, TimeUnit.SECONDS), "the lane closed");
    }
}
