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
    private final Map<Integer, MemorySegment> regions = new ConcurrentHashMap<>();
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
        regions.put(id, segment);
        return new RemoteMemoryKey(workerUuid, id, segment.address(), segment.byteSize());
    }

    /** Peers can no longer operate on the region of {@code key}. */
    public void unregister(RemoteMemoryKey key) {
        regions.remove(key.region());
    }

    MemorySegment region(int id) {
        return regions.get(id);
    }
}
