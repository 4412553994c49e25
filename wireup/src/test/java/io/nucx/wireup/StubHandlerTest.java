package io.nucx.wireup;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.embedded.EmbeddedChannel;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.channels.ClosedChannelException;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The wiring-up endpoint's write queue, on an embedded channel standing in for the endpoint. */
class StubHandlerTest {

    private final StubHandler stub = new StubHandler();
    private final EmbeddedChannel ch = new EmbeddedChannel(stub);

    private static ByteBuf msg(int n) {
        return Unpooled.buffer(4).writeInt(n);
    }

    private List<Integer> drain() {
        List<Integer> out = new ArrayList<>();
        for (ByteBuf b; (b = ch.readOutbound()) != null; ) {
            out.add(b.getInt(b.readerIndex()));
            b.release();
        }
        return out;
    }

    /** Nothing was passed on (a failed write's buffer is released, not written) and nothing is left to release. */
    private void assertNothingLeftOut() {
        assertNull(ch.readOutbound());
        assertFalse(ch.finish());
    }

    /** What the wireup puts in the stub's place; it only passes writes on. */
    private static ChannelOutboundHandlerAdapter next() {
        return new ChannelOutboundHandlerAdapter();
    }

    @Test
    void writesAndFlushesAreHeldUntilTheStubIsReplaced() {
        List<ChannelFuture> writes = new ArrayList<>();
        for (int i = 1; i <= 3; i++) {
            writes.add(ch.write(msg(i)));
        }
        ch.flush();
        assertEquals(3, stub.queued());
        assertNull(ch.readOutbound(), "nothing leaves while wiring up");
        writes.forEach(w -> assertFalse(w.isDone()));
        assertTrue(ch.isWritable());

        stub.ready();
        ch.pipeline().replace(stub, "next", next());
        assertEquals(List.of(1, 2, 3), drain(), "replayed in order and flushed, as the flush was remembered");
        writes.forEach(w -> assertTrue(w.isSuccess()));
        assertEquals(0, stub.queued());
        assertFalse(ch.finish());
    }

    @Test
    void replayWithoutARememberedFlushWaitsForTheNextFlush() {
        ChannelFuture w1 = ch.write(msg(1));
        stub.ready();
        ch.pipeline().replace(stub, "next", next());
        assertNull(ch.readOutbound());
        assertFalse(w1.isDone());
        ChannelFuture w2 = ch.write(msg(2));
        ch.flush();
        assertEquals(List.of(1, 2), drain());
        assertTrue(w1.isSuccess());
        assertTrue(w2.isSuccess());
        assertFalse(ch.finish());
    }

    @Test
    void writeFromAListenerDuringReplayComesAfterTheQueuedWrites() {
        List<ChannelFuture> late = new ArrayList<>();
        ChannelFuture w1 = ch.write(msg(1)).addListener((ChannelFutureListener) f ->
                late.add(ch.writeAndFlush(msg(3))));
        ChannelFuture w2 = ch.writeAndFlush(msg(2));
        stub.ready();
        ch.pipeline().replace(stub, "next", next());
        ch.flush();
        assertEquals(List.of(1, 2, 3), drain());
        assertTrue(w1.isSuccess());
        assertTrue(w2.isSuccess());
        assertEquals(1, late.size());
        assertTrue(late.get(0).isSuccess());
        assertFalse(ch.finish());
    }

    @Test
    void queuedWritesCountTowardTheEndpointsWritability() {
        ch.config().setWriteBufferWaterMark(new WriteBufferWaterMark(8, 16));
        ByteBuf big = Unpooled.buffer(64).writeZero(64);
        ch.write(big);
        assertFalse(ch.isWritable(), "queued bytes make the endpoint unwritable");
        stub.ready();
        ch.pipeline().replace(stub, "next", next());
        ch.flush();
        assertTrue(ch.isWritable());
        ByteBuf out = ch.readOutbound();
        assertSame(big, out);
        out.release();
        assertFalse(ch.finish());
    }

    /** A close while wiring up is graceful: it waits for the replay, then closes behind the queued writes. */
    @Test
    void closeBeforeReadyWaitsForTheReplayThenCloses() {
        List<ChannelFuture> writes = new ArrayList<>();
        for (int i = 1; i <= 3; i++) {
            writes.add(ch.write(msg(i)));
        }
        ch.flush();
        ChannelFuture close = ch.close();
        ChannelFuture second = ch.close();
        assertFalse(close.isDone() || second.isDone(), "the close waits for wireup");
        assertTrue(ch.isOpen());
        assertEquals(3, stub.queued());
        stub.ready();
        ch.pipeline().replace(stub, "next", next());
        assertTrue(close.isSuccess() && second.isSuccess());
        assertFalse(ch.isOpen());
        assertEquals(List.of(1, 2, 3), drain(), "the queued writes went out before the close");
        writes.forEach(w -> assertTrue(w.isSuccess()));
        assertFalse(ch.finish());
    }

    /** If wireup fails while a close waits, the close goes through and every queued write fails and is released. */
    @Test
    void closeBeforeReadyOfAFailingEndpointFailsEveryWriteAndReleasesItsBuffer() {
        List<ByteBuf> bufs = new ArrayList<>();
        List<ChannelFuture> writes = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            ByteBuf b = msg(i);
            bufs.add(b);
            writes.add(ch.write(b));
        }
        ch.flush();
        ChannelFuture deferred = ch.close();
        IOException cause = new IOException("peer unreachable");
        stub.fail(cause);
        assertTrue(ch.close().isSuccess(), "a failing endpoint's close is not deferred");
        assertTrue(deferred.isSuccess());
        for (int i = 0; i < 3; i++) {
            assertSame(cause, writes.get(i).cause(), "write " + i);
            assertEquals(0, bufs.get(i).refCnt(), "buffer " + i);
        }
        assertNothingLeftOut();
    }

    @Test
    void readyStubRemovedFromAClosedChannelFailsItsWrites() {
        ByteBuf b = msg(1);
        ChannelFuture w = ch.write(b);
        stub.ready();
        assertFalse(ch.finish());
        assertInstanceOf(ClosedChannelException.class, w.cause());
        assertEquals(0, b.refCnt());
    }

    @Test
    void failedWireupFailsEveryWriteWithItsCause() {
        ByteBuf b1 = msg(1);
        ByteBuf b2 = msg(2);
        ChannelFuture w1 = ch.write(b1);
        ChannelFuture w2 = ch.write(b2);
        IOException cause = new IOException("connect refused");
        stub.fail(cause);
        stub.fail(new IOException("second cause is ignored"));
        stub.ready(); // even if the lanes came up, the failure wins
        ch.pipeline().replace(stub, "next", next());
        assertSame(cause, w1.cause());
        assertSame(cause, w2.cause());
        assertEquals(0, b1.refCnt());
        assertEquals(0, b2.refCnt());
        assertNothingLeftOut();
    }

    @Test
    void failedStubRemovedByCloseFailsWritesWithTheWireupCause() {
        ByteBuf b = msg(1);
        ChannelFuture w = ch.write(b);
        IOException cause = new IOException("unreachable");
        stub.fail(cause);
        assertFalse(ch.finish());
        assertSame(cause, w.cause());
        assertEquals(0, b.refCnt());
    }
}
