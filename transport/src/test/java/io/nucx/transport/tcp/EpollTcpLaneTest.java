package io.nucx.transport.tcp;

import io.nucx.transport.IoEngine;
import io.nucx.transport.testsuite.LaneConformanceTest;

/** The lane conformance suite on tcp over epoll (skipped where it cannot load), with a peer process. */
class EpollTcpLaneTest extends LaneConformanceTest {
    EpollTcpLaneTest() {
        super(TcpTransport.NAME, IoEngine.EPOLL, true);
    }
}
