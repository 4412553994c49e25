package io.nucx.transport.tcp;

import io.nucx.transport.IoEngine;
import io.nucx.transport.testsuite.LaneConformanceTest;

/** The lane conformance suite on tcp over io_uring (skipped where it cannot load), with a peer process. */
class IoUringTcpLaneTest extends LaneConformanceTest {
    IoUringTcpLaneTest() {
        super(TcpTransport.NAME, IoEngine.IO_URING, true);
    }
}
