package io.nucx.transport.diag;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.util.ResourceLeakDetector;
import io.netty.util.ResourceLeakDetectorFactory;

import java.util.ArrayList;
import java.util.List;

/**
 * Netty's leak detector at PARANOID (every buffer tracked) with every report kept, so a process can fail on leaks
 * (a test, a test's peer process, a node that tells its test over the control channel) instead of only logging them.
 * Install before any buffer class initialises.
 */
public final class LeakLog {

    private static final List<String> LEAKS = new ArrayList<>();
    private static boolean installed;

    private LeakLog() {
    }

    /** Installs the recording detector factory and sets the level to PARANOID. Idempotent. */
    public static synchronized void install() {
        if (installed) {
            return;
        }
        installed = true;
        ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.PARANOID);
        ResourceLeakDetectorFactory.setResourceLeakDetectorFactory(new ResourceLeakDetectorFactory() {
            @Override
            @SuppressWarnings("deprecation")
            public <T> ResourceLeakDetector<T> newResourceLeakDetector(Class<T> resource, int samplingInterval,
                                                                       long maxActive) {
                return new ResourceLeakDetector<>(resource, samplingInterval) {
                    @Override
                    protected void reportTracedLeak(String resourceType, String records) {
                        record("LEAK: " + resourceType + records);
                    }

                    @Override
                    protected void reportUntracedLeak(String resourceType) {
                        record("LEAK: " + resourceType + " (untraced)");
                    }
                };
            }
        });
    }

    private static synchronized void record(String leak) {
        LEAKS.add(leak);
        System.err.println(leak);
    }

    /**
     * Lets the collector find unreachable tracked buffers and makes the detector poll, then returns every leak
     * reported since start; they are kept, so each call sees them all.
     */
    public static List<String> reported() {
        poll();
        synchronized (LeakLog.class) {
            return new ArrayList<>(LEAKS);
        }
    }

    /** As {@link #reported()}, but forgets what it returns, so the next call sees only leaks reported after it. */
    public static List<String> drain() {
        poll();
        synchronized (LeakLog.class) {
            List<String> out = new ArrayList<>(LEAKS);
            LEAKS.clear();
            return out;
        }
    }

    private static void poll() {
        for (int round = 0; round < 3; round++) {
            System.gc();
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
            // Every tracked allocation polls the detector's reference queue.
            for (ByteBufAllocator a : new ByteBufAllocator[] {ByteBufAllocator.DEFAULT, PooledByteBufAllocator.DEFAULT,
                    UnpooledByteBufAllocator.DEFAULT}) {
                for (int i = 0; i < 64; i++) {
                    ByteBuf b = a.directBuffer(8);
                    b.release();
                    b = a.heapBuffer(8);
                    b.release();
                }
            }
            Unpooled.directBuffer(1).release();
        }
    }
}
