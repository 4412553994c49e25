package io.nucx.transport.tcp;

import io.nucx.transport.IoEngine;
import io.nucx.transport.testsuite.LaneConformanceTest;

/** The lane conformance suite on tcp over NIO, with a peer process for the cross-process cases. */
class NioTcpLaneTest extends LaneConformanceTest {
    NioTcpLaneTest() {
        super(TcpTransport.NAME, IoEngine.NIO, true);
    }
}
