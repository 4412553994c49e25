package io.nucx.transport.tcp;

import io.netty.channel.EventLoop;
import io.netty.channel.IoEventLoop;
import io.netty.channel.IoHandler;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.SelectStrategy;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.channel.uring.IoUring;
import io.netty.channel.uring.IoUringIoHandler;
import io.netty.channel.uring.IoUringServerSocketChannel;
import io.netty.channel.uring.IoUringSocketChannel;
import io.nucx.transport.Availability;
import io.nucx.transport.NucxConfig;

/**
 * The three engines Netty runs TCP on, in the order nucx prefers them. Netty's channel classes are used as they
 * are; this only chooses among them and says why one is missing.
 */
public enum TcpIoMode {
    IO_URING("io_uring", IoUringIoHandler.class, IoUringSocketChannel.class, IoUringServerSocketChannel.class),
    EPOLL("epoll", EpollIoHandler.class, EpollSocketChannel.class, EpollServerSocketChannel.class),
    NIO("nio", NioIoHandler.class, NioSocketChannel.class, NioServerSocketChannel.class);

    private final String configName;
    private final Class<? extends IoHandler> handlerType;
    private final Class<? extends SocketChannel> socketChannel;
    private final Class<? extends ServerChannel> serverChannel;

    TcpIoMode(String configName, Class<? extends IoHandler> handlerType, Class<? extends SocketChannel> socketChannel,
              Class<? extends ServerChannel> serverChannel) {
        this.configName = configName;
        this.handlerType = handlerType;
        this.socketChannel = socketChannel;
        this.serverChannel = serverChannel;
    }

    /** The value of {@code NUCX_TCP_IO} that forces this engine. */
    public String configName() {
        return configName;
    }

    public Class<? extends SocketChannel> socketChannel() {
        return socketChannel;
    }

    public Class<? extends ServerChannel> serverChannel() {
        return serverChannel;
    }

    /** Whether the native engine loads here; the reason when it does not. */
    public Availability availability() {
        return switch (this) {
            case IO_URING -> IoUring.isAvailable() ? Availability.available()
                    : Availability.unavailable("io_uring: " + IoUring.unavailabilityCause());
            case EPOLL -> Epoll.isAvailable() ? Availability.available()
                    : Availability.unavailable("epoll: " + Epoll.unavailabilityCause());
            case NIO -> Availability.available();
        };
    }

    /**
     * A factory for event loops of this engine. Busy-poll spins epoll_wait with a zero timeout
     * ({@link SelectStrategy#BUSY_WAIT}); only epoll supports it, so the other engines ignore the request.
     */
    public IoHandlerFactory ioHandlerFactory(boolean busyPoll) {
        return switch (this) {
            case IO_URING -> IoUringIoHandler.newFactory();
            case EPOLL -> busyPoll
                    ? EpollIoHandler.newFactory(0, () -> (selectSupplier, hasTasks) -> SelectStrategy.BUSY_WAIT)
                    : EpollIoHandler.newFactory();
            case NIO -> NioIoHandler.newFactory();
        };
    }

    /** Whether channels of this engine can be registered on {@code loop}. */
    public boolean isCompatible(EventLoop loop) {
        return loop instanceof IoEventLoop io && io.isIoType(handlerType);
    }

    /** The engine a loop runs, or null if it is none of the three (e.g. a LocalIoHandler loop). */
    public static TcpIoMode of(EventLoop loop) {
        for (TcpIoMode m : values()) {
            if (m.isCompatible(loop)) {
                return m;
            }
        }
        return null;
    }

    /**
     * The engine {@code NUCX_TCP_IO} asks for: auto picks the first available (io_uring, epoll, nio; epoll first
     * when busy-polling, since only epoll spins); a forced engine that cannot load fails with its reason.
     */
    public static TcpIoMode configured(NucxConfig config, boolean busyPoll) {
        String v = config.choice(NucxConfig.TCP_IO, "auto", "io_uring", "epoll", "nio");
        if (v.equals("auto")) {
            if (busyPoll && EPOLL.availability().isAvailable()) {
                return EPOLL;
            }
            for (TcpIoMode m : values()) {
                if (m.availability().isAvailable()) {
                    return m;
                }
            }
            return NIO;
        }
        for (TcpIoMode m : values()) {
            if (m.configName.equals(v)) {
                Availability a = m.availability();
                if (!a.isAvailable()) {
                    throw config.invalid(NucxConfig.TCP_IO, a.reason());
                }
                return m;
            }
        }
        throw config.invalid(NucxConfig.TCP_IO, "expected auto | io_uring | epoll | nio");
    }
}
