package io.nucx.transport.self;

import io.netty.channel.ChannelHandler;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.nucx.transport.Iface;
import io.nucx.transport.IfaceParams;
import io.nucx.transport.NucxConfig;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * Two plain (NIO, non-polling) loops, a writer's and a reader's, for a self pair across threads; the ifaces opened on
 * them close, and the loops stop, after each test.
 */
final class SelfLoops implements BeforeEachCallback, AfterEachCallback {

    EventLoopGroup loopA;
    EventLoopGroup loopB;
    private final List<Map.Entry<Iface, EventLoopGroup>> ifaces = new ArrayList<>();

    @Override
    public void beforeEach(ExtensionContext context) {
        loopA = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        loopB = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    }

    @Override
    public void afterEach(ExtensionContext context) throws Exception {
        for (Map.Entry<Iface, EventLoopGroup> e : ifaces) {
            if (!e.getValue().isShuttingDown()) { // a test that shut its loop down: nothing to close the iface on
                e.getKey().close().sync();
            }
        }
        ifaces.clear();
        loopA.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        loopB.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
    }

    /** A self iface on {@code group}'s loop with the settings {@code config} (NUCX_ names without the prefix). */
    Iface open(EventLoopGroup group, Supplier<ChannelHandler> accepted, Map<String, String> config) {
        Iface iface = new SelfTransport().openIface(new IfaceParams(group.next(), SelfTransport.MEMORY, accepted,
                NucxConfig.of(config, Map.of())));
        ifaces.add(Map.entry(iface, group));
        return iface;
    }
}
