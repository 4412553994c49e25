package io.nucx.protocol.amo;

import io.nucx.protocol.KeyBundle;
import io.nucx.protocol.MemoryDomain;
import io.nucx.transport.rma.MemoryRegistration;

import java.lang.foreign.MemorySegment;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The memory a worker lets its peers reach (UCX's {@code ucp_mem_map}): native segments registered by id, for atomics
 * as active messages (a peer's atomic names a region and an address; only addresses inside a registered region are
 * ever touched) and, on each of the worker's RMA devices ({@link #domains}), for put, get and device atomics by the
 * peers' RMA lanes. Registration may happen on any thread.
 */
public final class MemoryRegistry {

    private record Region(MemorySegment segment, long secret, List<MemoryRegistration> registrations) {
    }

    private final long workerUuid;
    private final Map<Integer, Region> regions = new ConcurrentHashMap<>();
    private final SecureRandom random = new SecureRandom();
    private final AtomicInteger nextId = new AtomicInteger(1);
    private volatile List<MemoryDomain> domains = List.of();

    public MemoryRegistry(long workerUuid) {
        this.workerUuid = workerUuid;
    }

    /** The worker's RMA devices: memory registered from now on is registered on each. */
    public void domains(List<MemoryDomain> domains) {
        this.domains = List.copyOf(domains);
    }

    /**
     * Registers {@code segment} (native, of a shared or global arena) on every RMA device and returns the key a peer
     * needs. The segment must stay alive until {@link #unregister}: peers write it.
     *
     * @throws IllegalArgumentException for heap memory, an empty or confined segment
     * @throws IllegalStateException    when a device refused it (the error named; nothing stays registered)
     */
    public RemoteMemoryKey register(MemorySegment segment) {
        if (!segment.isNative()) {
            throw new IllegalArgumentException("only native memory can be registered for remote access (the GC "
                    + "moves heap arrays)");
        }
        if (segment.byteSize() == 0 || segment.address() == 0) {
            throw new IllegalArgumentException("cannot register an empty segment (" + segment.byteSize()
                    + " bytes at " + Long.toHexString(segment.address()) + ")");
        }
        if (!segment.isAccessibleBy(new Thread(() -> { }))) {
            // Arena.ofConfined(): only its owner thread may touch it, and atomics run on the worker's loop.
            throw new IllegalArgumentException("the segment is confined to thread " + Thread.currentThread().getName()
                    + "; register memory of a shared or global arena (Arena.ofShared(), Arena.global())");
        }
        List<MemoryRegistration> done = new ArrayList<>();
        List<KeyBundle.Key> keys = new ArrayList<>();
        try {
            for (MemoryDomain d : domains) {
                MemoryRegistration m = d.iface().registerMemory(segment);
                done.add(m);
                keys.add(new KeyBundle.Key(d.entry(), m.packedKey()));
            }
        } catch (RuntimeException e) {
            done.forEach(MemoryRegistration::close);
            throw e;
        }
        int id = nextId.getAndIncrement();
        long secret;
        synchronized (random) {
            do {
                secret = random.nextLong();
            } while (secret == 0); // 0 is what a key without a secret carries
        }
        regions.put(id, new Region(segment, secret, List.copyOf(done)));
        return new RemoteMemoryKey(workerUuid, id, segment.address(), segment.byteSize(), secret,
                keys.isEmpty() ? new byte[0] : KeyBundle.pack(keys));
    }

    /** Peers can no longer operate on the region of {@code key} (its secret needed): its device registrations end. */
    public void unregister(RemoteMemoryKey key) {
        Region r = regions.get(key.region());
        if (r != null && r.secret() == key.secret() && regions.remove(key.region(), r)) {
            r.registrations().forEach(MemoryRegistration::close);
        }
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
