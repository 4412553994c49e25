package io.nucx.wireup;

import io.netty.util.concurrent.Future;
import io.nucx.Endpoint;
import io.nucx.protocol.RmaTransfer;
import io.nucx.protocol.amo.RemoteMemoryKey;
import io.nucx.protocol.rma.RmaCodec;
import io.nucx.transport.cma.Cma;
import io.nucx.transport.rdma.VerbsEmulator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The RMA API between two workers of this JVM (#14 item 5): memory registered on every RMA device of its owner, its
 * key packed and unpacked, put and get of 1 byte to 8 MiB checked byte for byte, flush and fence per endpoint and per
 * worker, over rdma (the verbs emulator's two devices: large operations split over both) and over cma; and the errors
 * a user can make, each named.
 */
@Timeout(180)
class RdmaRmaApiTest {

    @RegisterExtension
    final TestWorkers workers = new TestWorkers();

    private static final int REGION = 16 << 20;

    private DefaultWorker worker(String name, String tls) throws Exception {
        if (tls.contains("rdma")) {
            String missing = VerbsEmulator.missing();
            assumeTrue(missing == null, () -> missing);
            return workers.start(name, "TLS", tls, "VERBS_LIB", VerbsEmulator.library());
        }
        assumeTrue(Cma.availability().isAvailable(), () -> Cma.availability().reason());
        return workers.start(name, "TLS", tls);
    }

    private static byte[] pattern(long seed, int n) {
        byte[] b = new byte[n];
        new SplittableRandom(seed).nextBytes(b);
        return b;
    }

    private static byte[] bytes(MemorySegment s, long offset, int n) {
        return s.asSlice(offset, n).toArray(ValueLayout.JAVA_BYTE);
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"rdma,tcp", "tcp,cma"})
    void putAndGetMoveEveryByteAndFlushAndFenceOrderThem(String tls) throws Exception {
        DefaultWorker a = worker("a", tls);
        DefaultWorker b = worker("b", tls);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment region = arena.allocate(REGION, 4096);
            // the key travels as bytes, as it would to another process
            RemoteMemoryKey key = RemoteMemoryKey.fromHex(b.registerMemory(region).toHex());
            assertEquals(tls.contains("rdma") ? 2 : 1, key.keys().size(), "a key per RMA device of b: " + key);
            Endpoint ab = a.connect(b.address());
            MemorySegment local = arena.allocate(REGION, 4096);
            int[] sizes = {1, 100, 4097, (1 << 20) + 3, 8 << 20};
            long offset = 0;
            for (int i = 0; i < sizes.length; i++) {
                byte[] data = pattern(i, sizes[i]);
                MemorySegment src = local.asSlice(0, sizes[i]);
                src.copyFrom(MemorySegment.ofArray(data));
                ab.put(src, key, key.base() + offset).get(30, TimeUnit.SECONDS);
                assertArrayEquals(data, bytes(region, offset, sizes[i]), "put of " + sizes[i] + " bytes");
                MemorySegment back = arena.allocate(sizes[i]);
                ab.get(back, key, key.base() + offset).get(30, TimeUnit.SECONDS);
                assertArrayEquals(data, bytes(back, 0, sizes[i]), "get of " + sizes[i] + " bytes");
                offset += sizes[i] + 64;
            }
            // heap memory on our side goes through bounce buffers
            byte[] heap = pattern(99, 300_000);
            ab.put(MemorySegment.ofArray(heap), key, key.base() + 17).get(30, TimeUnit.SECONDS);
            assertArrayEquals(heap, bytes(region, 17, heap.length));
            long[] words = new long[1000];
            ab.get(MemorySegment.ofArray(words), key, key.base() + 17).get(30, TimeUnit.SECONDS);
            assertArrayEquals(region.asSlice(17, 8000).toArray(ValueLayout.JAVA_LONG_UNALIGNED), words);

            // many puts in flight, then one flush: done means every byte is there
            List<Future<Void>> puts = new ArrayList<>();
            for (int i = 0; i < 64; i++) {
                MemorySegment src = arena.allocate(65536);
                src.copyFrom(MemorySegment.ofArray(pattern(1000 + i, 65536)));
                puts.add(ab.put(src, key, key.base() + (long) i * 65536));
            }
            ab.flushRma().get(30, TimeUnit.SECONDS);
            for (int i = 0; i < 64; i++) {
                assertTrue(puts.get(i).isSuccess(), "flush completed after put " + i);
                assertArrayEquals(pattern(1000 + i, 65536), bytes(region, (long) i * 65536, 65536));
            }

            // a fence: the small put behind it lands after the large one before it, whatever their sizes
            for (int round = 0; round < 5; round++) {
                MemorySegment big = arena.allocate(4 << 20);
                big.fill((byte) 1);
                MemorySegment small = arena.allocate(8);
                small.fill((byte) 2);
                ab.put(big, key, key.base());
                ab.fenceRma().get(10, TimeUnit.SECONDS);
                ab.put(small, key, key.base());
                a.flushRma().get(30, TimeUnit.SECONDS); // the worker's flush covers this endpoint
                assertArrayEquals(new byte[] {2, 2, 2, 2, 2, 2, 2, 2}, bytes(region, 0, 8), "round " + round);
                assertEquals(1, region.get(ValueLayout.JAVA_BYTE, 8));
            }
            assertTrue(a.counters().count(RmaCodec.PUT_COUNTER) > 70, a.counters().snapshot()::toString);
            if (tls.contains("rdma")) {
                // the 8 MiB operations were split over both devices
                assertTrue(a.counters().count(RmaTransfer.RAIL_BYTES_COUNTER + "rdma/emu1:1") > 8 << 20,
                        a.counters().snapshot()::toString);
            }
            a.fenceRma().get(10, TimeUnit.SECONDS);
            b.unregisterMemory(key);
        }
    }

    /** Every mistake fails only its own future, naming what is wrong; the endpoint goes on. */
    @Test
    void badKeysRangesAndPeersWithoutRmaFailNamingWhy() throws Exception {
        DefaultWorker a = worker("a", "rdma,tcp");
        DefaultWorker b = worker("b", "rdma,tcp");
        DefaultWorker c = worker("c", "rdma,tcp");
        DefaultWorker plain = workers.start("plain", "TLS", "tcp");
        try (Arena arena = Arena.ofShared()) {
            MemorySegment region = arena.allocate(4096, 64);
            RemoteMemoryKey key = b.registerMemory(region);
            RemoteMemoryKey other = c.registerMemory(arena.allocate(4096, 64));
            Endpoint ab = a.connect(b.address());
            MemorySegment local = arena.allocate(64);

            Throwable wrongWorker = cause(ab.put(local, other, other.base()));
            assertInstanceOf(IllegalArgumentException.class, wrongWorker);
            assertTrue(wrongWorker.getMessage().contains("registered by worker " + Long.toHexString(c.uuid())),
                    wrongWorker.getMessage());

            Throwable outside = cause(ab.get(local, key, key.base() + 4096 - 63));
            assertTrue(outside.getMessage().contains("64 bytes at 0x" + Long.toHexString(key.base() + 4096 - 63)
                    + " lie outside the registered region"), outside.getMessage());
            assertTrue(cause(ab.put(local, key, key.base() - 1)).getMessage().contains("outside"));

            // a key without device keys (a worker with no RMA device registered it)
            RemoteMemoryKey noDevices = new RemoteMemoryKey(key.workerUuid(), key.region(), key.base(),
                    key.length());
            Throwable bare = cause(ab.put(local, noDevices, key.base()));
            assertTrue(bare.getMessage().contains("carries no transport key"), bare.getMessage());

            // a peer reached by tcp only: no RMA lane, and the lanes named
            Endpoint toPlain = a.connect(plain.address());
            RemoteMemoryKey plainKey = plain.registerMemory(arena.allocate(64, 8));
            Throwable noLane = cause(toPlain.put(local, plainKey, plainKey.base()));
            assertInstanceOf(IllegalStateException.class, noLane);
            assertTrue(noLane.getMessage().contains("no transport offers RMA (PUT_ZCOPY) on both sides")
                    && noLane.getMessage().contains("tcp/"), noLane.getMessage());

            // a heap segment cannot be registered; the endpoint is fine after all of this
            IllegalArgumentException heap = assertThrows(IllegalArgumentException.class,
                    () -> b.registerMemory(MemorySegment.ofArray(new byte[64])));
            assertTrue(heap.getMessage().contains("native"), heap.getMessage());
            assertThrows(IllegalArgumentException.class,
                    () -> b.registerMemory(ByteBuffer.allocate(64)));
            local.fill((byte) 5);
            ab.put(local, key, key.base()).get(30, TimeUnit.SECONDS);
            assertEquals(5, region.get(ValueLayout.JAVA_BYTE, 63));
            assertTrue(ab.isActive());

            // after the owner unregistered it, the device refuses the key and the put fails (on hardware too the
            // queue pair then goes to the error state: the lane, here also the AM lane, is lost)
            b.unregisterMemory(key);
            Throwable revoked = cause(ab.put(local, key, key.base()));
            assertTrue(revoked.getMessage().contains("REM_ACCESS") || revoked.getMessage().contains("access"),
                    revoked.toString());
        }
    }

    private static Throwable cause(Future<Void> f) throws Exception {
        ExecutionException e = assertThrows(ExecutionException.class, () -> f.get(30, TimeUnit.SECONDS));
        return e.getCause();
    }
}
