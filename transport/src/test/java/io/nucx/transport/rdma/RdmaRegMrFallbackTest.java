package io.nucx.transport.rdma;

import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.nucx.transport.P2pEndpoint;
import io.nucx.transport.rma.MemoryRegistration;
import io.nucx.transport.rma.RemoteKey;
import io.nucx.transport.rma.RmaOp;
import io.nucx.transport.testsuite.Patterns;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Memory registration on a library without {@code ibv_reg_mr_iova2} (rdma-core before 28; the emulator built so):
 * the bindings fall back to {@code ibv_reg_mr}, and a PUT through memory registered that way lands.
 */
@Timeout(120)
class RdmaRegMrFallbackTest {

    @Test
    void withoutRegMrIova2TheBindingsRegisterWithRegMr() throws Exception {
        String missing = VerbsEmulator.missing();
        assumeTrue(missing == null, () -> missing);
        String old = VerbsEmulator.dir().resolve("pre-rdma-core-28/libibverbs.so.1").toString();
        assumeTrue(Files.exists(Path.of(old)), "the pre-28 emulator was not built");
        assertFalse(Verbs.load(old).hasRegMrIova2, "the library has ibv_reg_mr_iova2 after all");
        assertTrue(Verbs.load(VerbsEmulator.library()).hasRegMrIova2);
        try (RdmaNode a = RdmaNode.open(old, "emu0:1", false, Map.of());
             RdmaNode b = RdmaNode.open(old, "emu1:1", false, Map.of());
             Arena arena = Arena.ofShared()) {
            P2pEndpoint epA = a.endpoint(new ChannelInboundHandlerAdapter());
            P2pEndpoint epB = b.endpoint(new ChannelInboundHandlerAdapter());
            String addrA = a.address(epA);
            String addrB = b.address(epB);
            Channel laneA = a.connect(epA, addrB);
            Channel laneB = b.connect(epB, addrA);
            RdmaChannel lane = (RdmaChannel) laneA;
            MemorySegment target = arena.allocate(1 << 20, 4096);
            MemorySegment source = arena.allocate(1 << 20, 4096);
            Patterns.fill(source, 0, 3);
            MemoryRegistration exposed = b.loop.submit(() -> ((RdmaChannel) laneB).register(target)).get();
            MemoryRegistration local = a.loop.submit(() -> lane.register(source)).get();
            RemoteKey key = a.loop.submit(() -> lane.unpackKey(Unpooled.wrappedBuffer(exposed.packedKey()))).get();
            ChannelFuture put = laneA.writeAndFlush(RmaOp.put(key, 0, source));
            assertTrue(put.await(30, TimeUnit.SECONDS) && put.isSuccess(), () -> "PUT: " + put.cause());
            assertEquals(-1, Patterns.firstMismatch(target, 0, 3));
            a.loop.submit(local::close).get();
            b.loop.submit(exposed::close).get();
            laneA.close().sync();
            laneB.close().sync();
        }
    }
}
