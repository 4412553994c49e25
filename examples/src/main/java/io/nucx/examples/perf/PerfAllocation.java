package io.nucx.examples.perf;

import java.lang.management.ManagementFactory;

/** Bytes the calling thread has allocated so far (HotSpot's per-thread TLAB accounting), for per-message figures. */
final class PerfAllocation {

    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    private PerfAllocation() {
    }

    static long current() {
        return THREADS.getCurrentThreadAllocatedBytes();
    }
}
