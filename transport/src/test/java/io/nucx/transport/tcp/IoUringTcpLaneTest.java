package io.nucx.transport.tcp;

import io.nucx.transport.testsuite.LaneConformanceTest;

/** The lane conformance suite on tcp over io_uring (skipped where it cannot load), with a peer process. */
class IoUringTcpLaneTest extends LaneConformanceTest {
    IoUringTcpLaneTest() {
        super(TcpTransport.NAME, TcpIoMode.IO_URING, true);
    }
}
