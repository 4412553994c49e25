package io.nucx.examples.frameworks;

import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.ServerSocketChannel;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.nucx.NucxChannel;
import io.nucx.NucxEventLoopGroup;
import io.nucx.NucxServerChannel;

/**
 * What an app changes to move between plain Netty TCP and nucx: the event loop group and the two channel classes,
 * nothing else. {@link #NUCX}: {@link NucxEventLoopGroup} and the channel pair (lanes by NUCX_TLS: shm between
 * processes of one host, tcp otherwise); {@link #NETTY_TCP}: Netty's epoll (NIO where epoll does not load) sockets.
 */
public enum Stack {
    NUCX, NETTY_TCP;

    public static Stack parse(String s) {
        return switch (s) {
            case "nucx" -> NUCX;
            case "tcp", "netty-tcp" -> NETTY_TCP;
            default -> throw new IllegalArgumentException("stack '" + s + "': expected nucx or tcp");
        };
    }

    public EventLoopGroup newGroup(int threads) {
        if (this == NUCX) {
            return new NucxEventLoopGroup(threads);
        }
        return new MultiThreadIoEventLoopGroup(threads, Epoll.isAvailable() ? EpollIoHandler.newFactory()
                : NioIoHandler.newFactory());
    }

    public Class<? extends SocketChannel> channel() {
        return this == NUCX ? NucxChannel.class : Epoll.isAvailable() ? EpollSocketChannel.class
                : NioSocketChannel.class;
    }

    public Class<? extends ServerSocketChannel> serverChannel() {
        return this == NUCX ? NucxServerChannel.class : Epoll.isAvailable() ? EpollServerSocketChannel.class
                : NioServerSocketChannel.class;
    }

    /** As a plain {@code ServerChannel} class, for APIs typed so. */
    public Class<? extends ServerChannel> serverChannelType() {
        return serverChannel();
    }
}
