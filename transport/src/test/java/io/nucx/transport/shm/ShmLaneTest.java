package io.nucx.transport.shm;

import io.netty.channel.ChannelFuture;
import io.nucx.transport.IoEngine;
import io.nucx.transport.testsuite.LaneConformanceTest;

import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardWatchEventKinds;
import java.nio.file.WatchKey;
import java.nio.file.WatchService;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The lane conformance suite on shm (rings in /dev/shm, loops running a ShmIoHandler around NIO), with a peer
 * process for the cross-process cases; a killed peer leaves no files behind.
 */
class ShmLaneTest extends LaneConformanceTest {

    ShmLaneTest() {
        super(ShmTransport.NAME, IoEngine.NIO, true);
    }

    /** A write waiting for room in a killed reader's ring fails, naming the reader. */
    @Override
    protected void checkWriteToKilledPeer(ChannelFuture held, long pid) {
        ShmPeerGoneException e = assertInstanceOf(ShmPeerGoneException.class, held.cause());
        assertTrue(e.getMessage().contains("pid " + pid), e.getMessage());
    }

    /** The killed peer's files are gone: our side reaps its iface socket once it finds the peer dead. */
    @Override
    protected void afterPeerKilled(long pid) throws Exception {
        String prefix = "nucx-" + pid + "-";
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        try (WatchService watch = FileSystems.getDefault().newWatchService()) {
            ShmFiles.DIR.register(watch, StandardWatchEventKinds.ENTRY_DELETE);
            for (List<Path> left = filesOf(prefix); !left.isEmpty(); left = filesOf(prefix)) {
                long remaining = deadline - System.nanoTime();
                WatchKey key = remaining > 0 ? watch.poll(remaining, TimeUnit.NANOSECONDS) : null;
                assertNotNull(key, () -> "files of the killed peer still there: " + filesOfQuietly(prefix));
                key.pollEvents();
                key.reset();
            }
        }
    }

    private static List<Path> filesOf(String prefix) throws Exception {
        try (Stream<Path> files = Files.list(ShmFiles.DIR)) {
            return files.filter(f -> f.getFileName().toString().startsWith(prefix)).toList();
        }
    }

    private static String filesOfQuietly(String prefix) {
        try {
            return filesOf(prefix).toString();
        } catch (Exception e) {
            return e.toString();
        }
    }
}
