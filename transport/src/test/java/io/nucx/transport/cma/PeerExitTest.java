package io.nucx.transport.cma;

import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.nucx.transport.rma.MemoryRegistration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The watch on a cma lane's peer lives with the lane: opened by its first registration, kept for the next ones (a
 * pidfd opened and closed per registration cost each rendezvous PUT 2 us), closed once the lane has closed and its
 * last registration ended. Watched here: this process, through real lanes on a real loop.
 */
@Timeout(60)
class PeerExitTest {

    /** How many descriptors this process has open. */
    private static long openDescriptors() throws IOException {
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.count();
        }
    }

    @Test
    void aLanesRegistrationsShareOneWatchWhichClosesWithTheLane() throws Exception {
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        try (Arena arena = Arena.ofShared()) {
            CmaChannel lane = CmaChannel.toProcess(Cma.pid());
            group.next().register(lane).sync();
            MemorySegment buf = arena.allocate(4096, 4096);
            long before = lane.eventLoop().submit(PeerExitTest::openDescriptors).get();
            long[] during = lane.eventLoop().submit(() -> {
                long[] open = new long[3];
                for (int i = 0; i < open.length; i++) {
                    MemoryRegistration reg = lane.register(buf);
                    reg.close();
                    open[i] = openDescriptors();
                }
                return open;
            }).get(10, TimeUnit.SECONDS);
            for (long open : during) {
                assertEquals(before + 1, open, "one watch, kept between registrations");
            }
            lane.close().sync();
            assertEquals(before, (long) lane.eventLoop().submit(PeerExitTest::openDescriptors).get(),
                    "closed with the lane");
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }

    @Test
    void aRegistrationThatOutlivesItsLaneKeepsTheWatchUntilItEnds() throws Exception {
        PeerExit exit = new PeerExit(Cma.pid());
        exit.retain();
        assertTrue(exit.watching());
        exit.laneClosed();
        assertTrue(exit.watching(), "a registration still exposes memory: its revoke may wait for the peer's exit");
        exit.release();
        assertFalse(exit.watching());
        assertFalse(exit.exited());
    }
}
