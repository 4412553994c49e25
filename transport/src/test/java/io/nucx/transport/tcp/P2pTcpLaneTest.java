package io.nucx.transport.tcp;

import io.netty.channel.ChannelFuture;
import io.nucx.transport.Iface;
import io.nucx.transport.IoEngine;
import io.nucx.transport.P2pEndpoint;
import io.nucx.transport.testsuite.LaneConformanceTest;
import io.nucx.transport.testsuite.Recorder;

import java.util.Map;

/**
 * The lane conformance suite on tcp lanes connected endpoint to endpoint (NUCX_TCP_CONNECT=p2p): both ifaces create
 * an endpoint, a's connects to b's ({@code createEndpoint} / {@code connect}); epoll where it loads, else NIO; in
 * one process (the peer-process cases are the connect-to-iface subclasses').
 */
class P2pTcpLaneTest extends LaneConformanceTest {

    P2pTcpLaneTest() {
        super(TcpTransport.NAME, IoEngine.EPOLL.availability().isAvailable() ? IoEngine.EPOLL : IoEngine.NIO,
                false);
    }

    @Override
    protected Map<String, String> config() {
        return Map.of("TCP_CONNECT", "p2p");
    }

    @Override
    protected ChannelFuture connect(Iface from, Iface to, Recorder aSide, Recorder bSide) throws Exception {
        P2pEndpoint epB = onLoop(to, () -> to.createEndpoint(bSide));
        P2pEndpoint epA = onLoop(from, () -> from.createEndpoint(aSide));
        return onLoop(from, () -> epA.connect(to.deviceAddress(), to.ifaceAddress(), epB.address()));
    }
}
