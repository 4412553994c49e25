package io.nucx.transport.self;

import io.nucx.transport.IoEngine;
import io.nucx.transport.testsuite.LaneConformanceTest;

/** The lane conformance suite on self (two loops of one process). */
class SelfLaneTest extends LaneConformanceTest {
    SelfLaneTest() {
        super(SelfTransport.NAME, IoEngine.NIO, false);
    }
}
