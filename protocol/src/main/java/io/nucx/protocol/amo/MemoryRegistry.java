package io.nucx.protocol.amo;

import java.lang.foreign.MemorySegment;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The memory a worker lets its peers operate on: native segments registered by id. A peer's atomic names a region
 * and an address; only addresses inside a registered region are ever touched. Registration may happen on any thread.
 */
public final class MemoryRegistry {

    private final long workerUuid;
    private record Region(MemorySegment segment, long secret) {
    }

    private final Map<Integer, Region> regions = new ConcurrentHashMap<>();
    private final java.security.SecureRandom random = new java.security.SecureRandom();
    private final AtomicInteger nextId = new AtomicInteger(1);

    public MemoryRegistry(long workerUuid) {
        this.workerUuid = workerUuid;
    }

    /**
     * Registers {@code segment} (native, at least 8 bytes, 8-byte aligned) and returns the key a peer needs. The
     * segment must stay alive until {@link #unregister}: peers' atomics write it.
     */
    public RemoteMemoryKey register(MemorySegment segment) {
        if (!segment.isNative()) {
            throw new IllegalArgumentException("only native memory can be registered for remote atomics (the GC "
                    + "moves heap arrays)");
        }
        if (segment.byteSize() < 8 || segment.address() % 8 != 0) {
            throw new IllegalArgumentException("a registered region needs at least one aligned 8-byte word; this one "
                    + "is " + segment.byteSize() + " bytes at " + Long.toHexString(segment.address()));
        }
        if (!segment.isAccessibleBy(new Thread(() -> { }))) {
            // Arena.ofConfined(): only its owner thread may touch it, and atomics run on the worker's loop.
            throw new IllegalArgumentException("the segment is confined to thread " + Thread.currentThread().getName()
                    + "; register memory of a shared or global arena (Arena.ofShared(), Arena.global())");
        }
        int id = nextId.getAndIncrement();
        long secret;
        synchronized (random) {
            do {
                secret = random.nextLong();
            } while (secret == 0); // 0 is what a key without a secret carries
        }
        regions.put(id, new Region(segment, secret));
        return new RemoteMemoryKey(workerUuid, id, segment.address(), segment.byteSize(), secret);
    }

    /** Peers can no longer operate on the region of {@code key}. */
    public void unregister(RemoteMemoryKey key) {
        regions.computeIfPresent(key.region(), (id, r) -> r.secret() == key.secret() ? null : r);
    }

    /**
     * The region {@code id}, if {@code secret} is its secret; otherwise null, the same answer as for a region that
     * does not exist, so a wrong guess tells a prober nothing.
     */
    MemorySegment region(int id, long secret) {
        Region r = regions.get(id);
        return r != null && r.secret() == secret ? r.segment() : null;
    }
}
