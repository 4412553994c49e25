package io.nucx.transport.shm;

import io.netty.channel.IoHandle;

/**
 * What {@link ShmIoHandler} drives: a handle polled on every pass of its loop instead of woken by the kernel. The
 * loop thread calls every method.
 */
public interface ShmIoHandle extends IoHandle {

    @Override
    void close();

    /** Delivers what its rings hold and resumes writes a full ring held back; returns how much it did (0 = idle). */
    int poll();

    /**
     * Announces that the loop is about to park (flags in the shared rings, so the other side rings the doorbell),
     * then re-checks: false if there is work after all, and the loop must not park.
     */
    boolean prepareToPark();

    /** The loop is awake again: clears what {@link #prepareToPark()} announced. */
    void unpark();
}
