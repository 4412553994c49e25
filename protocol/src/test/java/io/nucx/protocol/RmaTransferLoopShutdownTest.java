package io.nucx.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.channel.EventLoop;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.nucx.transport.cma.Cma;
import io.nucx.transport.cma.CmaChannel;
import io.nucx.transport.rma.MemoryRegistration;
import io.nucx.transport.rma.RemoteKey;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * A transfer through a bounce buffer (heap memory) moves one chunk per loop turn, the next chunk a timer. A plain
 * Netty group shut down under it cancels that timer: the transfer must then fail, saying why, and give its bounce
 * buffer back, rather than never end. Real memory moved by a real cma lane to this process.
 */
@Timeout(60)
class RmaTransferLoopShutdownTest {

    @Test
    void aBounceTransferWhoseLoopShutsDownBetweenChunksFailsAndGivesItsBufferBack() throws Exception {
        int size = 4 * RmaTransfer.BOUNCE_CHUNK;
        MultiThreadIoEventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        UnpooledByteBufAllocator alloc = new UnpooledByteBufAllocator(true);
        ByteBuf local = Unpooled.buffer(size); // heap: moved through a bounce buffer
        try (Arena arena = Arena.ofShared()) {
            EventLoop loop = group.next();
            CmaChannel lane = CmaChannel.toProcess(Cma.pid());
            loop.register(lane).sync();
            MemorySegment remote = arena.allocate(size);
            remote.fill((byte) 7);
            RemoteKey key = loop.submit(() -> {
                MemoryRegistration reg = lane.register(remote);
                return lane.unpackKey(Unpooled.wrappedBuffer(reg.packedKey()));
            }).get(10, TimeUnit.SECONDS);
            CompletableFuture<Void> outcome = new CompletableFuture<>();
            RmaTransfer get = new RmaTransfer(false,
                    List.of(new RmaTransfer.RailKey(new RmaRail(lane, 0, 0, 1e10, "cma/memory"), key)), local, 0,
                    size, 0, alloc, loop, null) {
                @Override
                protected void finished() {
                    outcome.complete(null);
                }

                @Override
                protected void failed(Throwable cause) {
                    outcome.completeExceptionally(cause);
                }
            };
            loop.submit(() -> {
                get.start(); // the first chunk moves now, the next is a timer
                group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            }).get(10, TimeUnit.SECONDS);

            Throwable cause;
            try {
                outcome.get(30, TimeUnit.SECONDS);
                fail("a " + size + "-byte GET whose loop shut down after its first chunk reported success");
                return;
            } catch (TimeoutException e) {
                fail("a bounce transfer whose loop shut down between chunks never ended");
                return;
            } catch (ExecutionException e) {
                cause = e.getCause();
            }
            assertInstanceOf(RejectedExecutionException.class, cause);
            assertTrue(cause.getMessage().contains("event loop shut down " + RmaTransfer.BOUNCE_CHUNK + " of " + size),
                    cause.getMessage());
            assertEquals(7, local.getByte(0), "the first chunk was moved");
            assertEquals(0, alloc.metric().usedDirectMemory(), "the bounce buffer is back");
            assertTrue(group.awaitTermination(10, TimeUnit.SECONDS));
        } finally {
            local.release();
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }
}
