package io.nucx.transport.testing;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.util.ResourceLeakDetector;
import io.netty.util.ResourceLeakDetectorFactory;

import java.util.ArrayList;
import java.util.List;

/**
 * Records every leak Netty's detector reports, so tests (and peer processes of tests) can fail on them. Install
 * before any buffer class initialises; runs at PARANOID so every buffer is tracked.
 */
public final class LeakRecorder {

    private static final List<String> LEAKS = new ArrayList<>();
    private static boolean installed;

    private LeakRecorder() {
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
     * Lets the collector find unreachable tracked buffers and makes the detector poll its queue, then returns (and
     * forgets) every leak reported so far.
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
            // Every tracked allocation polls the detector's reference queue.
            for (ByteBufAllocator a : new ByteBufAllocator[] {ByteBufAllocator.DEFAULT, PooledByteBufAllocator.DEFAULT,
                    io.netty.buffer.UnpooledByteBufAllocator.DEFAULT}) {
                for (int i = 0; i < 64; i++) {
                    ByteBuf b = a.directBuffer(8);
                    b.release();
                    b = a.heapBuffer(8);
                    b.release();
                }
            }
            Unpooled.directBuffer(1).release();
        }
        synchronized (LeakRecorder.class) {
            List<String> out = new ArrayList<>(LEAKS);
            LEAKS.clear();
            return out;
        }
    }
}
