package io.nucx.transport;

import io.netty.channel.Channel;
import io.netty.channel.EventLoop;
import io.netty.channel.IoEventLoop;
import io.netty.channel.IoHandle;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollDomainSocketChannel;
import io.netty.channel.epoll.EpollIoHandle;
import io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandle;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioDomainSocketChannel;
import io.netty.channel.socket.nio.NioServerDomainSocketChannel;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.channel.unix.DomainSocketAddress;
import io.netty.channel.uring.IoUring;
import io.netty.channel.uring.IoUringDomainSocketChannel;
import io.netty.channel.uring.IoUringIoHandle;
import io.netty.channel.uring.IoUringServerDomainSocketChannel;
import io.netty.channel.uring.IoUringIoHandler;
import io.netty.channel.uring.IoUringIoHandlerConfig;
import io.netty.channel.uring.IoUringServerSocketChannel;
import io.netty.channel.uring.IoUringSocketChannel;

import java.net.SocketAddress;
import java.net.UnixDomainSocketAddress;
import java.nio.file.Path;
import java.util.Optional;

/**
 * The three engines Netty runs sockets on, in the order nucx prefers them: tcp's lanes and shm's setup and doorbell
 * sockets use the engine of the worker's loop, so this lives in the SPI (transports do not import one another).
 * Netty's channel classes are used as they are; this only chooses among them and says why one is missing.
 */
public enum IoEngine {
    IO_URING("io_uring", IoUringIoHandle.class, IoUringSocketChannel.class, IoUringServerSocketChannel.class,
            IoUringDomainSocketChannel.class, IoUringServerDomainSocketChannel.class),
    EPOLL("epoll", EpollIoHandle.class, EpollSocketChannel.class, EpollServerSocketChannel.class,
            EpollDomainSocketChannel.class, EpollServerDomainSocketChannel.class),
    NIO("nio", NioIoHandle.class, NioSocketChannel.class, NioServerSocketChannel.class,
            NioDomainSocketChannel.class, NioServerDomainSocketChannel.class);

    private final String configName;
    private final Class<? extends IoHandle> handleType;
    private final Class<? extends SocketChannel> socketChannel;
    private final Class<? extends ServerChannel> serverChannel;
    private final Class<? extends Channel> domainSocketChannel;
    private final Class<? extends ServerChannel> serverDomainSocketChannel;

    IoEngine(String configName, Class<? extends IoHandle> handleType, Class<? extends SocketChannel> socketChannel,
              Class<? extends ServerChannel> serverChannel, Class<? extends Channel> domainSocketChannel,
              Class<? extends ServerChannel> serverDomainSocketChannel) {
        this.configName = configName;
        this.handleType = handleType;
        this.socketChannel = socketChannel;
        this.serverChannel = serverChannel;
        this.domainSocketChannel = domainSocketChannel;
        this.serverDomainSocketChannel = serverDomainSocketChannel;
    }

    /** This engine's Unix-domain stream socket (the shm transport's setup and doorbell connection). */
    public Class<? extends Channel> domainSocketChannel() {
        return domainSocketChannel;
    }

    public Class<? extends ServerChannel> serverDomainSocketChannel() {
        return serverDomainSocketChannel;
    }

    /** The address type this engine's domain sockets take for a socket file. */
    public SocketAddress domainSocketAddress(Path file) {
        return this == NIO ? UnixDomainSocketAddress.of(file) : new DomainSocketAddress(file.toString());
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
     * Completion queue entries of an io_uring loop (16 bytes each, 512 KiB). Every connection keeps a few operations
     * in flight, so thousands of connections closing at once (peers going, a flood of REQUESTs refused) complete
     * more at once than the default queue holds: the kernel then parks the overflow and Netty warns. Eight times the
     * default submission ring leaves room for that.
     */
    static final int IO_URING_CQ_SIZE = 32768;

    /**
     * A factory for event loops of this engine. Busy-polling is not done here but by the shm engine wrapped around it
     * ({@code ShmIoHandler}), in non-blocking passes: epoll's own busy wait spins in native code until a descriptor
     * is ready, so tasks from other threads and timers would wait for it.
     */
    public IoHandlerFactory ioHandlerFactory() {
        return switch (this) {
            case IO_URING -> IoUringIoHandler.newFactory(new IoUringIoHandlerConfig().setCqSize(IO_URING_CQ_SIZE));
            case EPOLL -> EpollIoHandler.newFactory();
            case NIO -> NioIoHandler.newFactory();
        };
    }

    /**
     * Whether channels of this engine can be registered on {@code loop}: asked by handle type, not handler class,
     * so that a loop whose handler wraps this engine's (the shm transport's) counts too.
     */
    public boolean isCompatible(EventLoop loop) {
        return loop instanceof IoEventLoop io && io.isCompatible(handleType);
    }

    /** The engine a loop runs, or null if it is none of the three (e.g. a LocalIoHandler loop). */
    public static IoEngine of(EventLoop loop) {
        for (IoEngine m : values()) {
            if (m.isCompatible(loop)) {
                return m;
            }
        }
        return null;
    }

    /**
     * The engine {@code NUCX_TCP_IO} asks for: auto picks the first available (io_uring, epoll, nio; epoll first
     * for a loop that polls, busy or for a spin before it parks: its non-blocking pass is one epoll_wait, and its
     * lanes read large payloads straight into the receiver's buffer, which io_uring's do not; and Netty 4.2.18's
     * io_uring pass allocates its completion callback each time, 16 bytes per pass of a spinning loop, netty#17437,
     * fixed in a later release); a forced engine that cannot load fails with its reason.
     *
     * @param polls whether the loop makes non-blocking passes (NUCX_BUSY_POLL, or a NUCX_SHM_SPIN above 0)
     */
    public static IoEngine configured(NucxConfig config, boolean polls) {
        Optional<IoEngine> forced = config.get(TransportConfig.TCP_IO);
        if (forced.isPresent()) {
            Availability a = forced.get().availability();
            if (!a.isAvailable()) {
                throw config.invalid(TransportConfig.TCP_IO, a.reason());
            }
            return forced.get();
        }
        if (polls && EPOLL.availability().isAvailable()) {
            return EPOLL;
        }
        for (IoEngine m : values()) {
            if (m.availability().isAvailable()) {
                return m;
            }
        }
        return NIO;
    }
}
