package io.nucx.examples.perf;

import com.sun.management.ThreadMXBean;

import java.lang.management.ManagementFactory;

/** Bytes the calling thread has allocated so far (HotSpot's per-thread TLAB accounting), for per-message figures. */
final class PerfAllocation {

    private static final ThreadMXBean THREADS = (ThreadMXBean) ManagementFactory.getThreadMXBean();

    private PerfAllocation() {
    }

    static long current() {
        return THREADS.getCurrentThreadAllocatedBytes();
    }
}
