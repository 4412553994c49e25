package io.nucx.transport.shm;

import io.netty.channel.ChannelHandler;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.nucx.transport.Iface;
import io.nucx.transport.IfaceParams;
import io.nucx.transport.NucxConfig;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The shm tests' ifaces: each opened on a loop of its own (shm's I/O handler over NIO, 20 ms park), all closed, then
 * their loops shut down, by {@link #close()} at the end of a test.
 */
final class ShmIfaces implements AutoCloseable {

    private final List<EventLoopGroup> groups = new ArrayList<>();
    private final List<Iface> ifaces = new ArrayList<>();

    /** Opens an iface with the default configuration whose accepted lanes get {@code accepted}'s handlers. */
    Iface open(Supplier<ChannelHandler> accepted) throws Exception {
        return open(accepted, Map.of());
    }

    /** Opens an iface with the settings {@code overrides} (NUCX_ names) whose accepted lanes get {@code accepted}. */
    Iface open(Supplier<ChannelHandler> accepted, Map<String, String> overrides) throws Exception {
        return open(accepted, overrides, 20_000);
    }

    /** As {@link #open(Supplier, Map)}, on a loop that spins {@code spinNanos} before it parks (MAX_VALUE: never). */
    Iface open(Supplier<ChannelHandler> accepted, Map<String, String> overrides, long spinNanos) throws Exception {
        EventLoopGroup g = new MultiThreadIoEventLoopGroup(1, ShmIoHandler.newFactory(NioIoHandler.newFactory(),
                spinNanos));
        groups.add(g);
        Iface i = new ShmTransport().openIface(new IfaceParams(g.next(), ShmTransport.MEMORY, accepted,
                NucxConfig.of(overrides, Map.of())));
        ifaces.add(i);
        return i;
    }

    @Override
    public void close() throws InterruptedException {
        for (Iface i : ifaces) {
            i.close().await(5, TimeUnit.SECONDS);
        }
        for (EventLoopGroup g : groups) {
            g.shutdownGracefully(0, 1, TimeUnit.SECONDS).await(10, TimeUnit.SECONDS);
        }
    }
}
