package io.nucx.transport.rdma;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.nucx.transport.AmFrame;
import io.nucx.transport.P2pEndpoint;
import io.nucx.transport.rma.InvalidRemoteKeyException;
import io.nucx.transport.rma.MemoryRegistration;
import io.nucx.transport.rma.RemoteKey;
import io.nucx.transport.rma.RmaOp;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** Two rdma lanes in one process over the verbs emulator, one per emulated device: frames, RMA, atomics, errors. */
@Timeout(120)
class RdmaChannelTest {

    private final List<AutoCloseable> closeables = new ArrayList<>();
    private RdmaNode a;
    private RdmaNode b;
    private final BlockingQueue<AmFrame> receivedByB = new LinkedBlockingQueue<>();
    private Channel laneA;
    private Channel laneB;

    private P2pEndpoint epA;
    private P2pEndpoint epB;
    private String addrA;
    private String addrB;

    @BeforeEach
    void connect(TestInfo info) throws Exception {
        String missing = VerbsEmulator.testsMissing();
        assumeTrue(missing == null, () -> missing);
        a = RdmaNode.open(VerbsEmulator.testLibrary(), VerbsEmulator.device(0), false, Map.of());
        closeables.add(a);
        b = RdmaNode.open(VerbsEmulator.testLibrary(), VerbsEmulator.device(1), false, Map.of());
        closeables.add(b);
        epA = a.endpoint(new ChannelInboundHandlerAdapter());
        epB = b.endpoint(new ChannelInboundHandlerAdapter() {
            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                receivedByB.add((AmFrame) msg);
            }
        });
        addrA = a.address(epA);
        addrB = b.address(epB);
        if (info.getTags().contains("late")) {
            return; // the test connects the lanes itself
        }
        laneA = a.connect(epA, addrB);
        laneB = b.connect(epB, addrA);
    }

    @AfterEach
    void close() throws Exception {
        AmFrame f;
        while ((f = receivedByB.poll()) != null) {
            f.release();
        }
        if (laneA != null) {
            laneA.close().sync();
        }
        if (laneB != null) {
            laneB.close().sync();
        }
        for (int i = closeables.size() - 1; i >= 0; i--) {
            closeables.get(i).close();
        }
    }

    static AmFrame frame(int amId, int seq, int payloadLength) {
        ByteBuf header = Unpooled.buffer(4).writeInt(seq);
        byte[] bytes = new byte[payloadLength];
        for (int i = 0; i < payloadLength; i++) {
            bytes[i] = (byte) (seq * 31 + i);
        }
        return AmFrame.of(amId, 3, header, Unpooled.wrappedBuffer(bytes));
    }

    @Test
    void framesArriveInOrderWithTheirContent() throws Exception {
        RdmaChannel ch = (RdmaChannel) laneA;
        int max = ch.maxFrameLength() - 4;
        int n = 2000;
        List<ChannelFuture> writes = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            writes.add(laneA.writeAndFlush(frame(1 + i % 200, i, i % 3 == 0 ? 0 : (i * 7919) % (max + 1))));
        }
        for (int i = 0; i < n; i++) {
            AmFrame f = receivedByB.poll(30, TimeUnit.SECONDS);
            int seq = i;
            assertNotNull(f, () -> "frame " + seq + " did not arrive; sender " + laneA + " active " + laneA.isActive()
                    + ", credits " + ((RdmaChannel) laneA).credits() + ", failure " + ((RdmaChannel) laneA).failure()
                    + "; receiver active " + laneB.isActive() + ", failure " + ((RdmaChannel) laneB).failure()
                    + (VerbsEmulator.testsOnEmulator() ? "; emulator counters "
                    + Arrays.toString(VerbsEmulator.counters()) : ""));
            try {
                assertEquals(1 + i % 200, f.amId());
                assertEquals(3, f.flags());
                assertEquals(i, f.header().getInt(f.header().readerIndex()));
                int len = i % 3 == 0 ? 0 : (i * 7919) % (max + 1);
                // one copy, then plain array reads: the PARANOID leak detector records a trace per ByteBuf access
                byte[] got = ByteBufUtil.getBytes(f.payload());
                assertEquals(len, got.length, "payload length of frame " + i);
                for (int j = 0; j < len; j++) {
                    if (got[j] != (byte) (i * 31 + j)) {
                        assertEquals((byte) (i * 31 + j), got[j], "byte " + j + " of frame " + i);
                    }
                }
            } finally {
                f.release();
            }
        }
        for (ChannelFuture w : writes) {
            assertTrue(w.await(30, TimeUnit.SECONDS) && w.isSuccess(), () -> "write failed: " + w.cause());
        }
    }

    /**
     * RC's connection rule: a frame sent before the peer's queue pair reached RTR is not lost; the device sends it
     * again (ACK timeout x retry count) and it arrives once the peer has connected.
     */
    @Test
    @org.junit.jupiter.api.Tag("late")
    void aFrameSentBeforeThePeerConnectedArrivesOnceItHas() throws Exception {
        laneA = a.connect(epA, addrB);
        ChannelFuture early = laneA.writeAndFlush(frame(7, 0, 100));
        // the peer connects a while later: within the retry budget (7 x 67 ms)
        b.loop.schedule(() -> null, 100, TimeUnit.MILLISECONDS).get();
        laneB = b.connect(epB, addrA);
        AmFrame f = receivedByB.poll(30, TimeUnit.SECONDS);
        assertNotNull(f, () -> "the early frame did not arrive: " + early.cause());
        f.release();
        assertTrue(early.await(30, TimeUnit.SECONDS) && early.isSuccess(), () -> "early write: " + early.cause());
    }

    /** A peer whose queue pair never connects: the device gives up after its retries and the write fails, named. */
    @Test
    @org.junit.jupiter.api.Tag("late")
    void aPeerThatNeverConnectsFailsTheWriteWithRetryExceeded() throws Exception {
        laneA = a.connect(epA, addrB);
        ChannelFuture w = laneA.writeAndFlush(frame(7, 0, 100));
        assertTrue(w.await(60, TimeUnit.SECONDS), "the write neither completed nor failed");
        VerbsException e = assertInstanceOf(VerbsException.class, w.cause());
        assertTrue(e.getMessage().contains("IBV_WC_RETRY_EXC_ERR"), e.getMessage());
        assertTrue(laneA.closeFuture().await(30, TimeUnit.SECONDS));
        b.loop.submit(epB::close).get();
    }

    @Test
    void putGetAndAtomicsOnThePeersMemory() throws Exception {
        RdmaChannel lane = (RdmaChannel) laneA;
        RdmaChannel peerLane = (RdmaChannel) laneB;
        try (Arena arena = Arena.ofShared()) {
            MemorySegment remote = arena.allocate(1 << 20, 4096);
            MemorySegment local = arena.allocate(1 << 20, 4096);
            MemoryRegistration exposed = b.loop.submit(() -> peerLane.register(remote)).get();
            RemoteKey key = a.loop.submit(() -> lane.unpackKey(Unpooled.wrappedBuffer(exposed.packedKey()))).get();
            for (int i = 0; i < 1 << 20; i++) {
                local.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 13));
            }
            // local memory not registered: the lane registers it for the operation
            RmaOp put = RmaOp.put(key, 4096, local.asSlice(0, 100_000));
            laneA.writeAndFlush(put).sync();
            assertEquals(100_000, put.done());
            for (int i = 0; i < 100_000; i++) {
                if (remote.get(ValueLayout.JAVA_BYTE, 4096 + i) != (byte) (i * 13)) {
                    assertEquals((byte) (i * 13), remote.get(ValueLayout.JAVA_BYTE, 4096 + i), "PUT byte " + i);
                }
            }
            // local memory registered: its own lkey
            MemoryRegistration mine = a.loop.submit(() -> lane.register(local)).get();
            remote.asSlice(500_000, 1000).fill((byte) 0x5a);
            laneA.writeAndFlush(RmaOp.get(key, 500_000, local.asSlice(200_000, 1000))).sync();
            for (int i = 0; i < 1000; i++) {
                assertEquals((byte) 0x5a, local.get(ValueLayout.JAVA_BYTE, 200_000 + i), "GET byte " + i);
            }
            remote.set(ValueLayout.JAVA_LONG, 8, 40);
            RmaOp add = RmaOp.fetchAdd(key, 8, 2);
            laneA.writeAndFlush(add).sync();
            assertEquals(40, add.result());
            assertEquals(42, remote.get(ValueLayout.JAVA_LONG, 8));
            RmaOp miss = RmaOp.compareAndSwap(key, 8, 41, 7);
            laneA.writeAndFlush(miss).sync();
            assertEquals(42, miss.result());
            assertEquals(42, remote.get(ValueLayout.JAVA_LONG, 8));
            RmaOp hit = RmaOp.compareAndSwap(key, 8, 42, 7);
            laneA.writeAndFlush(hit).sync();
            assertEquals(42, hit.result());
            assertEquals(7, remote.get(ValueLayout.JAVA_LONG, 8));
            // verbs has no plain swap: refused, the lane goes on
            ChannelFuture swap = laneA.writeAndFlush(RmaOp.swap(key, 8, 1));
            assertInstanceOf(UnsupportedOperationException.class, swap.await().cause());
            assertTrue(laneA.isActive());

            // revoked: the device refuses the key, the request fails naming the status, and (RC) the lane breaks
            assertTrue(b.loop.submit(exposed::revoke).get().await(10, TimeUnit.SECONDS));
            ChannelFuture refused = laneA.writeAndFlush(RmaOp.get(key, 0, local.asSlice(0, 64)));
            assertTrue(refused.await(30, TimeUnit.SECONDS));
            VerbsException e = assertInstanceOf(VerbsException.class, refused.cause());
            assertTrue(e.getMessage().contains("IBV_WC_REM_ACCESS_ERR"), e.getMessage());
            assertTrue(laneA.closeFuture().await(30, TimeUnit.SECONDS));
            a.loop.submit(mine::close).get();
        }
    }

    @Test
    void keysOfAnotherProtectionDomainAreRefused() throws Exception {
        RdmaChannel lane = (RdmaChannel) laneA;
        try (Arena arena = Arena.ofShared()) {
            // memory of our own side (another protection domain than the peer's) is not the peer's
            MemoryRegistration own = a.loop.submit(() -> lane.register(arena.allocate(64))).get();
            InvalidRemoteKeyException e = assertThrowsOnLoop(() -> lane.unpackKey(Unpooled.wrappedBuffer(
                    own.packedKey())));
            assertTrue(e.getMessage().contains("protection domain"), e.getMessage());
            InvalidRemoteKeyException shortKey = assertThrowsOnLoop(() -> lane.unpackKey(Unpooled.wrappedBuffer(
                    new byte[27])));
            assertTrue(shortKey.getMessage().contains("27"), shortKey.getMessage());
            IllegalArgumentException heap = Assertions.assertThrows(
                    IllegalArgumentException.class, () -> lane.register(MemorySegment.ofArray(new byte[8])));
            assertTrue(heap.getMessage().contains("heap"), heap.getMessage());
            a.loop.submit(own::close).get();
        }
    }

    private InvalidRemoteKeyException assertThrowsOnLoop(Callable<?> c) throws Exception {
        try {
            a.loop.submit(c).get();
        } catch (ExecutionException e) {
            return assertInstanceOf(InvalidRemoteKeyException.class, e.getCause());
        }
        throw new AssertionError("no exception");
    }
}
