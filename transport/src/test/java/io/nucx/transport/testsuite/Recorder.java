package io.nucx.transport.testsuite;

import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.util.ReferenceCountUtil;
import io.nucx.transport.AmFrame;

import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The handler at the end of a lane under test: keeps what arrives (frames, in order), what happens (active, inactive,
 * writability changes, exceptions) and lets a test wait for each with a deadline. Frames are the test's to release
 * ({@link #expect}, {@link #releaseAll}).
 */
public final class Recorder extends ChannelInboundHandlerAdapter {

    /** How long a test waits for anything a lane should do. */
    public static final long DEADLINE_SECONDS = 30;

    private final boolean autoRead;
    final BlockingQueue<AmFrame> frames = new LinkedBlockingQueue<>();
    final List<Throwable> errors = new CopyOnWriteArrayList<>();
    final CompletableFuture<Channel> active = new CompletableFuture<>();
    final CompletableFuture<Void> inactive = new CompletableFuture<>();
    /** Each writability change as the channel saw it, in order. */
    final BlockingQueue<Boolean> writability = new LinkedBlockingQueue<>();
    /** The fewest and most stack frames under a channelRead so far (the loop thread's only). */
    private int leastDepth = Integer.MAX_VALUE;
    private int mostDepth;

    public Recorder() {
        this(true);
    }

    /** @param autoRead false: the lane starts not reading (a slow reader) until {@code setAutoRead(true)} */
    public Recorder(boolean autoRead) {
        this.autoRead = autoRead;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        if (!autoRead) {
            ctx.channel().config().setAutoRead(false);
        }
        if (ctx.channel().isActive()) {
            active.complete(ctx.channel());
        }
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
        active.complete(ctx.channel());
        ctx.fireChannelActive();
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        int depth = StackWalker.getInstance().walk(s -> (int) s.count());
        leastDepth = Math.min(leastDepth, depth);
        mostDepth = Math.max(mostDepth, depth);
        if (msg instanceof AmFrame f) {
            frames.add(f);
        } else {
            ReferenceCountUtil.release(msg);
            errors.add(new AssertionError("not an AmFrame: " + msg));
        }
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        writability.add(ctx.channel().isWritable());
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        errors.add(cause);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        inactive.complete(null);
        ctx.fireChannelInactive();
    }

    /** The lane, once active. */
    /**
     * How much deeper the deepest channelRead's stack was than the shallowest's: a constant when each read batch is
     * delivered from the loop (or a task), growing with the batches when a batch's end delivers the next one from
     * within its own call (auto-read's {@code read()} reading at once), which a fast writer turns into a stack overflow.
     * Read it on the channel's loop, or after the frames were taken.
     */
    public int readNesting() {
        return mostDepth - leastDepth;
    }

    public Channel channel() throws Exception {
        return active.get(DEADLINE_SECONDS, TimeUnit.SECONDS);
    }

    /** The next frame, or null after the deadline. */
    public AmFrame poll() throws InterruptedException {
        return frames.poll(DEADLINE_SECONDS, TimeUnit.SECONDS);
    }

    /** The next frame within {@code timeout}, or null. */
    public AmFrame poll(long timeout, TimeUnit unit) throws InterruptedException {
        return frames.poll(timeout, unit);
    }

    /** Takes frames {@code from .. from + count - 1} of {@link Frames#numbered} in order, checking each. */
    public void expect(long from, long count) throws InterruptedException {
        for (long s = from; s < from + count; s++) {
            AmFrame f = poll();
            assertNotNull(f, "frame " + s + " did not arrive");
            try {
                assertNull(Frames.checkNumbered(f, s));
            } finally {
                f.release();
            }
        }
    }

    /** Waits for the writability change to {@code writable}, skipping others; fails after the deadline. */
    public void awaitWritability(boolean writable) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(DEADLINE_SECONDS);
        for (;;) {
            Boolean w = writability.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            assertNotNull(w, "the lane did not turn " + (writable ? "writable" : "unwritable"));
            if (w == writable) {
                return;
            }
        }
    }

    /** Waits until the lane is inactive. */
    public void awaitInactive() throws Exception {
        inactive.get(DEADLINE_SECONDS, TimeUnit.SECONDS);
    }

    public List<Throwable> errors() {
        return errors;
    }

    /** Nothing arrived that was not taken. */
    public void assertDrained() {
        assertEquals(0, frames.size(), "frames nobody expected");
        assertTrue(errors.isEmpty(), () -> "errors: " + errors);
    }

    public void releaseAll() {
        for (AmFrame f; (f = frames.poll()) != null; ) {
            f.release();
        }
    }
}
