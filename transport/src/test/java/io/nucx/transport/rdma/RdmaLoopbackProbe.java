package io.nucx.transport.rdma;

import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.nucx.transport.AmFrame;
import io.nucx.transport.P2pEndpoint;
import io.nucx.transport.rma.MemoryRegistration;
import io.nucx.transport.rma.RemoteKey;
import io.nucx.transport.rma.RmaOp;
import io.nucx.transport.testsuite.Patterns;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * Two lanes in one process, one per device of the library in {@code args[0]} (run in a JVM of its own so the
 * emulator's environment can differ: RoCE ports, for instance): prints each side's link layer and source GID index,
 * then sends 100 frames and a 1 MiB PUT and prints OK, or the first thing that went wrong.
 */
public final class RdmaLoopbackProbe {

    public static void main(String[] args) throws Exception {
        String lib = args[0];
        BlockingQueue<AmFrame> received = new LinkedBlockingQueue<>();
        try (RdmaNode a = RdmaNode.open(lib, "emu0:1", false, Map.of());
             RdmaNode b = RdmaNode.open(lib, "emu1:1", false, Map.of());
             Arena arena = Arena.ofShared()) {
            for (RdmaNode n : new RdmaNode[] {a, b}) {
                RdmaContext rc = n.iface.context();
                System.out.println("LINK " + rc.linkLayer + " GID " + rc.gidIndex + " LID " + rc.lid);
            }
            P2pEndpoint epA = a.endpoint(new ChannelInboundHandlerAdapter());
            P2pEndpoint epB = b.endpoint(new ChannelInboundHandlerAdapter() {
                @Override
                public void channelRead(ChannelHandlerContext ctx, Object msg) {
                    received.add((AmFrame) msg);
                }
            });
            String addrA = a.address(epA);
            String addrB = b.address(epB);
            Channel laneA = a.connect(epA, addrB);
            Channel laneB = b.connect(epB, addrA);
            for (int i = 0; i < 100; i++) {
                laneA.writeAndFlush(RdmaChannelTest.frame(3, i, 1000));
            }
            for (int i = 0; i < 100; i++) {
                AmFrame f = received.poll(30, TimeUnit.SECONDS);
                if (f == null || f.header().getInt(f.header().readerIndex()) != i) {
                    System.out.println("FAILED frame " + i + ": " + f);
                    return;
                }
                f.release();
            }
            MemorySegment target = arena.allocate(1 << 20, 4096);
            MemorySegment source = arena.allocate(1 << 20, 4096);
            Patterns.fill(source, 0, 4);
            MemoryRegistration exposed = b.loop.submit(() -> ((RdmaChannel) laneB).register(target)).get();
            RemoteKey key = a.loop.submit(() -> ((RdmaChannel) laneA).unpackKey(
                    Unpooled.wrappedBuffer(exposed.packedKey()))).get();
            var put = laneA.writeAndFlush(RmaOp.put(key, 0, source)).await();
            long bad = Patterns.firstMismatch(target, 0, 4);
            System.out.println(put.isSuccess() && bad < 0 ? "OK" : "FAILED put " + put.cause() + " first bad " + bad);
            b.loop.submit(exposed::close).get();
            laneA.close().sync();
            laneB.close().sync();
        }
    }
}
