package io.nucx.transport.rdma;

import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.uring.IoUringIoHandler;
import io.nucx.transport.Device;
import io.nucx.transport.IfaceParams;
import io.nucx.transport.NucxConfig;
import io.nucx.transport.P2pEndpoint;
import io.nucx.transport.shm.ShmIoHandler;

import java.lang.foreign.MemorySegment;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * One side of an rdma test: an event loop (epoll, or busy-polling through ShmIoHandler), an iface on one emulated
 * device, and helpers to make and connect endpoints. Used in the test JVM and in {@link RdmaPeer}.
 */
final class RdmaNode implements AutoCloseable {

    final EventLoopGroup group;
    final EventLoop loop;
    final RdmaIface iface;

    private RdmaNode(EventLoopGroup group, RdmaIface iface) {
        this.group = group;
        this.loop = group.next();
        this.iface = iface;
    }

    /** Loop engines a node can run. */
    enum Engine { EPOLL, EPOLL_BUSY_POLL, IO_URING }

    static RdmaNode open(String library, String device, boolean busyPoll, Map<String, String> settings)
            throws Exception {
        return open(library, device, busyPoll ? Engine.EPOLL_BUSY_POLL : Engine.EPOLL, settings);
    }

    static RdmaNode open(String library, String device, Engine engine, Map<String, String> settings)
            throws Exception {
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, switch (engine) {
            case EPOLL -> EpollIoHandler.newFactory();
            case EPOLL_BUSY_POLL -> ShmIoHandler.newFactory(EpollIoHandler.newFactory(), Long.MAX_VALUE);
            case IO_URING -> IoUringIoHandler.newFactory();
        });
        try {
            RdmaTransport t = new RdmaTransport(library);
            if (!t.availability().isAvailable()) {
                throw new IllegalStateException(t.availability().reason());
            }
            NucxConfig config = NucxConfig.of(settings, Map.of()).validate();
            EventLoop loop = group.next();
            RdmaIface iface = loop.submit(() -> (RdmaIface) t.openIface(new IfaceParams(loop,
                    new Device(device, RdmaTransport.NAME), () -> {
                        throw new IllegalStateException("rdma accepts no connect-to-iface lanes");
                    }, config))).get(30, TimeUnit.SECONDS);
            return new RdmaNode(group, iface);
        } catch (Exception e) {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            throw e;
        }
    }

    P2pEndpoint endpoint(ChannelHandler handler) throws Exception {
        return loop.submit(() -> iface.createEndpoint(handler)).get(30, TimeUnit.SECONDS);
    }

    /** {@code device address hex} + " " + {@code endpoint address hex}. */
    String address(P2pEndpoint ep) throws Exception {
        byte[] epAddress = loop.submit(ep::address).get(30, TimeUnit.SECONDS);
        return HexFormat.of().formatHex(iface.deviceAddress()) + " " + HexFormat.of().formatHex(epAddress);
    }

    Channel connect(P2pEndpoint ep, String peerAddress) throws Exception {
        String[] w = peerAddress.trim().split(" ");
        byte[] dev = HexFormat.of().parseHex(w[0]);
        byte[] epAddr = HexFormat.of().parseHex(w[1]);
        loop.submit(() -> ep.connect(dev, new byte[0], epAddr)).get(30, TimeUnit.SECONDS).sync();
        return ep.connected().get(30, TimeUnit.SECONDS);
    }

    RdmaMemory register(MemorySegment segment) throws VerbsException {
        return iface.registerMemory(segment);
    }

    @Override
    public void close() throws Exception {
        iface.close();
        group.shutdownGracefully(0, 5, TimeUnit.SECONDS).sync();
    }
}
