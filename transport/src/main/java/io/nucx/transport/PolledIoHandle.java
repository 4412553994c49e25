package io.nucx.transport;

import io.netty.channel.IoHandle;

/**
 * A handle an event loop polls on every pass instead of being woken by the kernel: shm rings, an rdma iface's
 * completion queues. {@code ShmIoHandler}, the engine that wraps epoll, io_uring or NIO, drives every handle of this
 * type; a transport that wants busy-polling registers one when its loop {@code isCompatible(PolledIoHandle.class)}.
 * Transports share this hook through the SPI, so none imports another. The loop thread calls every method.
 */
public interface PolledIoHandle extends IoHandle {

    @Override
    void close();

    /** Takes what arrived and resumes writes that waited for room; returns how much it did (0 = idle). */
    int poll();

    /**
     * Announces that the loop is about to park (flags in shared rings, armed completion queues), then re-checks:
     * false if there is work after all, and the loop must not park.
     */
    boolean prepareToPark();

    /** The loop is awake again: clears what {@link #prepareToPark()} announced. */
    void unpark();

    /**
     * Called once, right after registration, when the loop polls without ever parking (busy-poll): it will never call
     * {@link #prepareToPark()}, so a handle may tell its peers they need not check whether to wake it.
     */
    default void loopNeverParks() {
    }
}
