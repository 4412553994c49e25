package io.nucx.transport.self;

import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.nucx.transport.AmFrame;
import io.nucx.transport.Iface;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.ArrayList;
import java.util.Collections;
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
 * A self flush moves everything it was given, and at most a bounded batch more that its completions' listeners write:
 * a writer that writes again from each completion lets its loop run its I/O and timers in between, and a loop shut down
 * in between fails what is left rather than leave it waiting. Two plain loops; the reader does not read until the test
 * says, and its queue has room for every frame, so the writer never waits for it.
 */
@Timeout(30)
class SelfWriterTurnsTest {

    /** Under {@link SelfChannel#MAX_SLOTS} and far under the queue's bytes: writing them needs no room freed. */
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

    private static AmFrame frame(long sequence) {
        return AmFrame.of(1, 0, Unpooled.buffer(8).writeLongLE(sequence), Unpooled.EMPTY_BUFFER);
    }

    /**
     * Writes {@link #FRAMES} numbered frames, one at a time: the first from a loop task, each next one from the listener
     * of the last one's success, so that it joins the flush completing it (as a writer that refills its window from its
     * completions does). Runs {@code after} in that task, once the first flush returned. The writes, in order.
     */
    private static List<ChannelFuture> writeFromCompletions(Channel writer, Consumer<List<ChannelFuture>> after)
            throws Exception {
        List<ChannelFuture> writes = Collections.synchronizedList(new ArrayList<>(FRAMES));
        writer.eventLoop().submit(() -> {
            writeNext(writer, writes);
            after.accept(writes);
        }).get(10, TimeUnit.SECONDS);
        return writes;
    }

    private static void writeNext(Channel writer, List<ChannelFuture> writes) {
        ChannelPromise promise = writer.newPromise();
        writes.add(promise);
        promise.addListener(f -> {
            if (f.isSuccess() && writes.size() < FRAMES) {
                writeNext(writer, writes);
            }
        });
        writer.writeAndFlush(frame(writes.size() - 1), promise);
    }

    private static long done(List<ChannelFuture> writes) {
        synchronized (writes) {
            return writes.stream().filter(ChannelFuture::isDone).count();
        }
    }

    private static void assertAllReadInOrder(Pair p, List<ChannelFuture> writes) throws Exception {
        p.reader().expected = new CountDownLatch(FRAMES);
        p.readerChannel().eventLoop().execute(() -> p.readerChannel().config().setAutoRead(true));
        assertTrue(p.reader().expected.await(10, TimeUnit.SECONDS), "every frame arrives");
        assertEquals(FRAMES, writes.size());
        // A record is in the ring before its write completes: the last may arrive first.
        assertTrue(writes.get(FRAMES - 1).await(10, TimeUnit.SECONDS), "the last write never completed");
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
    void aWriterThatWritesFromItsCompletionsLetsItsLoopRunItsTimersBetweenBatches() throws Exception {
        Pair p = connect();
        long[] writtenByFirstFlush = new long[1];
        CompletableFuture<Long> writtenWhenTimerRan = new CompletableFuture<>();
        // The timer is handed the writes: it may run before this thread has the task's result.
        List<ChannelFuture> writes = writeFromCompletions(p.writer(), ws -> {
            writtenByFirstFlush[0] = done(ws);
            p.writer().eventLoop().schedule(() -> writtenWhenTimerRan.complete(done(ws)), 0, TimeUnit.NANOSECONDS);
        });
        assertEquals(1 + SelfChannel.WRITE_BATCH, writtenByFirstFlush[0],
                "the first flush moved its write and one batch of those its completions brought");
        long written = writtenWhenTimerRan.get(10, TimeUnit.SECONDS);
        assertTrue(written < FRAMES, "a timer set after the first of " + FRAMES
                + " writes from completions waited for all of them");
        assertAllReadInOrder(p, writes);
    }

    /**
     * A writer that queued its window while the lane was busy (the ordinary path) finds it moved by one flush, so its
     * next sends go straight into the ring again; a flush moving a batch at a time behind such a writer's refills never
     * emptied the buffer (BENCHMARKS.md, self under a flood).
     */
    @Test
    void aFlushMovesEverythingItWasGivenBeforeItsLoopTurns() throws Exception {
        Pair p = connect();
        CompletableFuture<Long> writtenWhenTimerRan = new CompletableFuture<>();
        List<ChannelFuture> writes = p.writer().eventLoop().submit(() -> {
            List<ChannelFuture> ws = new ArrayList<>(FRAMES);
            for (int i = 0; i < FRAMES; i++) {
                ws.add(p.writer().write(frame(i)));
            }
            p.writer().flush();
            p.writer().eventLoop().schedule(() -> writtenWhenTimerRan.complete(done(ws)), 0, TimeUnit.NANOSECONDS);
            return ws;
        }).get(10, TimeUnit.SECONDS);
        assertEquals(FRAMES, writtenWhenTimerRan.get(10, TimeUnit.SECONDS),
                "writes of one flush left to a later turn of the loop");
        assertAllReadInOrder(p, writes);
    }

    @Test
    void writesLeftWhenTheWritersLoopShutsDownFailSayingSoAndTheLaneCloses() throws Exception {
        Pair p = connect();
        List<ChannelFuture> writes = writeFromCompletions(p.writer(),
                ws -> loops.loopA.shutdownGracefully(0, 1, TimeUnit.SECONDS));
        assertTrue(p.writer().closeFuture().await(10, TimeUnit.SECONDS), "the lane closed");
        ChannelFuture last;
        synchronized (writes) {
            last = writes.get(writes.size() - 1);
        }
        assertTrue(last.await(10, TimeUnit.SECONDS), "the last write never ended (" + done(writes) + " of "
                + writes.size() + " did)");
        assertTrue(writes.size() < FRAMES, "every write went before the loop shut down");
        assertFalse(last.isSuccess(), "the last write succeeded on a loop shut down before its batch");
        assertInstanceOf(RejectedExecutionException.class, last.cause());
        assertTrue(last.cause().getMessage().contains("event loop shut down"), last.cause().getMessage());
        assertTrue(writes.get(0).isSuccess(), "the first batch was moved");
    }
}
