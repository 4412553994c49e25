package io.nucx.examples.frameworks;

import io.netty.channel.Channel;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoEventLoop;
import io.netty.channel.IoEventLoopGroup;
import io.netty.channel.epoll.EpollDatagramChannel;
import io.netty.channel.epoll.EpollIoHandle;
import io.netty.channel.socket.DatagramChannel;
import io.netty.channel.socket.ServerSocketChannel;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioDatagramChannel;
import io.netty.channel.uring.IoUringDatagramChannel;
import io.netty.channel.uring.IoUringIoHandle;
import io.nucx.NucxChannel;
import io.nucx.NucxEventLoopGroup;
import io.nucx.NucxServerChannel;
import reactor.core.publisher.Mono;
import reactor.netty.resources.LoopResources;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * Reactor Netty's loops and channel types mapped to nucx's, for {@code HttpServer.runOn(...)} and
 * {@code HttpClient.runOn(...)}: one {@link NucxEventLoopGroup} for servers and clients, and for the channel types
 * Reactor asks for, {@link NucxServerChannel} and {@link NucxChannel}. Datagram channels (Reactor's DNS resolver) are
 * the wrapped TCP engine's own, which nucx's loops run unchanged.
 */
public final class NucxLoopResources implements LoopResources {

    private final EventLoopGroup group;

    public NucxLoopResources(int threads) {
        this.group = new NucxEventLoopGroup(threads);
    }

    @Override
    public EventLoopGroup onServer(boolean useNative) {
        return group;
    }

    @Override
    public EventLoopGroup onServerSelect(boolean useNative) {
        return group;
    }

    @Override
    public EventLoopGroup onClient(boolean useNative) {
        return group;
    }

    @Override
    @SuppressWarnings("unchecked")
    public <C extends Channel> Class<? extends C> onChannelClass(Class<C> type, EventLoopGroup loops) {
        if (type == SocketChannel.class) {
            return (Class<? extends C>) NucxChannel.class;
        }
        if (type == ServerSocketChannel.class) {
            return (Class<? extends C>) NucxServerChannel.class;
        }
        if (type == DatagramChannel.class) {
            IoEventLoop loop = (IoEventLoop) ((IoEventLoopGroup) loops).next();
            return (Class<? extends C>) (loop.isCompatible(IoUringIoHandle.class) ? IoUringDatagramChannel.class
                    : loop.isCompatible(EpollIoHandle.class) ? EpollDatagramChannel.class : NioDatagramChannel.class);
        }
        throw new IllegalArgumentException("nucx has no channel for " + type.getName());
    }

    @Override
    public <C extends Channel> C onChannel(Class<C> type, EventLoopGroup loops) {
        try {
            return onChannelClass(type, loops).getDeclaredConstructor().newInstance();
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot make a " + type.getName(), e);
        }
    }

    @Override
    public Mono<Void> disposeLater(Duration quietPeriod, Duration timeout) {
        return Mono.defer(() -> {
            group.shutdownGracefully(quietPeriod.toMillis(), timeout.toMillis(), TimeUnit.MILLISECONDS);
            return Mono.create(sink -> group.terminationFuture().addListener(f -> sink.success()));
        });
    }

    @Override
    public boolean isDisposed() {
        return group.isShuttingDown();
    }
}
