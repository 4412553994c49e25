package io.nucx.transport.self;

import io.netty.channel.IoHandlerFactory;
import io.nucx.transport.IoEngine;
import io.nucx.transport.shm.ShmIoHandler;
import io.nucx.transport.testsuite.LaneConformanceTest;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The lane conformance suite on self (two loops of one process), on three kinds of loop: loops that poll (a
 * {@link ShmIoHandler}, as every worker's loop is), where a self channel registers as a polled handle and a write
 * schedules no read task unless the reader's loop parks, both parking at once and busy-polling; and plain loops, where
 * every batch of writes schedules a read task.
 */
class SelfLaneTest {

    /** Loops that park as soon as a pass finds nothing: every write races the reader's park handshake. */
    @Nested
    class ParkingAtOnce extends LaneConformanceTest {
        ParkingAtOnce() {
            super(SelfTransport.NAME, IoEngine.NIO, false);
        }

        @Override
        protected IoHandlerFactory loopFactory() {
            return ShmIoHandler.newFactory(IoEngine.NIO.ioHandlerFactory(), 0);
        }
    }

    /** Loops that never park (busy-polling): reads come from the loop's passes alone. */
    @Nested
    class BusyPolling extends LaneConformanceTest {
        BusyPolling() {
            super(SelfTransport.NAME, IoEngine.NIO, false);
        }

        @Override
        protected IoHandlerFactory loopFactory() {
            return ShmIoHandler.newFactory(IoEngine.NIO.ioHandlerFactory(), Long.MAX_VALUE);
        }

        /** Both ends of a lane on polling loops are polled handles (what the suite above then exercises). */
        @Test
        void bothEndsArePolled() throws Exception {
            Lane lane = lane(true);
            assertTrue(((SelfChannel) lane.a()).isPolled() && ((SelfChannel) lane.b()).isPolled());
        }
    }

    /** On a loop that does not poll, reads come as tasks, as before. */
    @Nested
    class PlainLoop extends LaneConformanceTest {
        PlainLoop() {
            super(SelfTransport.NAME, IoEngine.NIO, false);
        }

        @Test
        void neitherEndIsPolled() throws Exception {
            Lane lane = lane(true);
            assertFalse(((SelfChannel) lane.a()).isPolled() || ((SelfChannel) lane.b()).isPolled());
        }
    }
}
