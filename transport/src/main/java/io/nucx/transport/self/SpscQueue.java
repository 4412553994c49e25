package io.nucx.transport.self;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * A bounded single-producer single-consumer queue over an array (Lamport's ring, as Agrona's
 * {@code OneToOneConcurrentArrayQueue}): unlike {@code ConcurrentLinkedQueue} it allocates no node per element, so a
 * self lane moves a message without allocating.
 *
 * <p>Memory ordering: the producer stores the element, then publishes the tail with a release store; the consumer
 * reads the tail with an acquire load, so the element is visible, takes it, clears the slot, then publishes the head
 * with a release store; the producer reads the head with an acquire load before it reuses a slot.
 */
final class SpscQueue<E> {

    private static final VarHandle SLOT = MethodHandles.arrayElementVarHandle(Object[].class);
    private static final VarHandle HEAD;
    private static final VarHandle TAIL;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            HEAD = l.findVarHandle(SpscQueue.class, "head", long.class);
            TAIL = l.findVarHandle(SpscQueue.class, "tail", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final Object[] slots;
    private final int mask;
    /** Written by the consumer only. */
    @SuppressWarnings("unused")
    private volatile long head;
    /** Written by the producer only. */
    @SuppressWarnings("unused")
    private volatile long tail;

    /** @param capacity at least this many elements (rounded up to a power of two) */
    SpscQueue(int capacity) {
        int n = Integer.highestOneBit(Math.max(2, capacity) - 1) << 1;
        this.slots = new Object[n];
        this.mask = n - 1;
    }

    /** Producer: appends {@code e}; false when full. */
    boolean offer(E e) {
        long t = (long) TAIL.getOpaque(this);
        if (t - (long) HEAD.getAcquire(this) >= slots.length) {
            return false;
        }
        SLOT.setRelease(slots, (int) (t & mask), e);
        TAIL.setRelease(this, t + 1);
        return true;
    }

    /** Consumer: the oldest element, removed; null when empty. */
    @SuppressWarnings("unchecked")
    E poll() {
        long h = (long) HEAD.getOpaque(this);
        if (h == (long) TAIL.getAcquire(this)) {
            return null;
        }
        int i = (int) (h & mask);
        E e = (E) SLOT.getAcquire(slots, i);
        SLOT.setRelease(slots, i, null);
        HEAD.setRelease(this, h + 1);
        return e;
    }

    /** Slots in all. */
    int capacity() {
        return slots.length;
    }

    /** Either side: how many are queued (a moment's view). */
    int size() {
        return (int) ((long) TAIL.getAcquire(this) - (long) HEAD.getAcquire(this));
    }

    /** Either side: whether nothing is queued (a moment's view). */
    boolean isEmpty() {
        return (long) HEAD.getAcquire(this) == (long) TAIL.getAcquire(this);
    }
}
