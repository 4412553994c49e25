package io.nucx.examples.node;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.util.ResourceLeakDetector;
import io.netty.util.ResourceLeakDetectorFactory;

import java.util.ArrayList;
import java.util.List;

/**
 * Netty's leak detector at PARANOID with every report kept, so a node can tell the test over its control channel
 * (and fail its exit status) instead of only logging. Installed before any buffer class is initialised.
 */
public final class LeakWatch {

    private static final List<String> LEAKS = new ArrayList<>();
    private static boolean installed;

    private LeakWatch() {
    }

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
     * Lets the collector find unreachable tracked buffers and makes the detector poll (every tracked allocation
     * does), then returns every leak reported since start; they are kept, so each call sees them all.
     */
    public static List<String> collect() {
        for (int round = 0; round < 3; round++) {
            System.gc();
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
            for (ByteBufAllocator a : new ByteBufAllocator[] {ByteBufAllocator.DEFAULT, PooledByteBufAllocator.DEFAULT,
                    UnpooledByteBufAllocator.DEFAULT}) {
                for (int i = 0; i < 64; i++) {
                    ByteBuf b = a.directBuffer(8);
                    b.release();
                    b = a.heapBuffer(8);
                    b.release();
                }
            }
        }
        synchronized (LeakWatch.class) {
            return new ArrayList<>(LEAKS);
        }
    }
}
