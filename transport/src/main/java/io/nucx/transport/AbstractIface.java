package io.nucx.transport;

import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.EventLoop;
import io.netty.util.concurrent.Future;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * What every iface shares (UCT's {@code uct_base_iface_t}): its transport and device, the loop all its channels run
 * on, its attributes and packed addresses, the handler lanes accepted from peers get, and closing once. A subclass
 * says how a peer is reached ({@link #isReachable}, {@link #connect}) and what closing releases ({@link #doClose}).
 */
public abstract class AbstractIface implements Iface {

    /** The name of the caller's handler in every lane's pipeline, after the transport's own handlers. */
    public static final String LANE_HANDLER = "nucx.lane";

    private final Transport transport;
    private final IfaceParams params;
    private final IfaceAttributes attributes;
    private final byte[] deviceAddress;
    private final byte[] ifaceAddress;
    private Future<?> closeFuture;

    /**
     * @param deviceAddress packed into the worker address, see {@link #deviceAddress()} (copied)
     * @param ifaceAddress  packed into the worker address, see {@link #ifaceAddress()} (copied)
     */
    protected AbstractIface(Transport transport, IfaceParams params, IfaceAttributes attributes, byte[] deviceAddress,
                            byte[] ifaceAddress) {
        this.transport = transport;
        this.params = params;
        this.attributes = attributes;
        this.deviceAddress = deviceAddress.clone();
        this.ifaceAddress = ifaceAddress.clone();
    }

    @Override
    public final Transport transport() {
        return transport;
    }

    @Override
    public final Device device() {
        return params.device();
    }

    @Override
    public final IfaceAttributes attributes() {
        return attributes;
    }

    @Override
    public final byte[] deviceAddress() {
        return deviceAddress.clone();
    }

    @Override
    public final byte[] ifaceAddress() {
        return ifaceAddress.clone();
    }

    /** The loop every channel of this iface runs on (the worker's). */
    public final EventLoop eventLoop() {
        return params.eventLoop();
    }

    /** The configuration the iface was opened with. */
    protected final NucxConfig config() {
        return params.config();
    }

    /** A new handler for a lane a peer connected to this iface (the worker's lane handler). */
    protected final ChannelHandler newAcceptedLaneHandler() {
        return params.acceptedLane().get();
    }

    /** Closes the iface once: later calls return the first call's future. */
    @Override
    public final Future<?> close() {
        synchronized (this) {
            if (closeFuture == null) {
                closeFuture = doClose();
            }
            return closeFuture;
        }
    }

    /** Whether {@link #close()} was called. */
    public final synchronized boolean isClosed() {
        return closeFuture != null;
    }

    /** Releases what the iface holds (a listening socket, a registry entry); lanes stay open. Called once. */
    protected Future<?> doClose() {
        return eventLoop().newSucceededFuture(null);
    }

    /** Puts {@code laneHandler} at the end of {@code lane}'s pipeline and registers the lane with {@code loop}. */
    protected static ChannelFuture registerLane(EventLoop loop, Channel lane, ChannelHandler laneHandler) {
        lane.pipeline().addLast(LANE_HANDLER, laneHandler);
        return loop.register(lane);
    }

    /** A lane that cannot be made: closed at once, its future failed with {@code cause}. */
    protected static ChannelFuture failedLane(Channel lane, Throwable cause) {
        lane.unsafe().closeForcibly();
        return lane.newFailedFuture(cause);
    }

    /** A little-endian buffer of {@code length} bytes to pack an address into (every nucx address is LE). */
    protected static ByteBuffer packer(int length) {
        return ByteBuffer.allocate(length).order(ByteOrder.LITTLE_ENDIAN);
    }

    /** A little-endian view of a packed address. */
    protected static ByteBuffer reader(byte[] address) {
        return ByteBuffer.wrap(address).order(ByteOrder.LITTLE_ENDIAN);
    }

    /**
     * Whether a device address that starts with a host id (tcp, shm, cma) names this host: one boot of one kernel,
     * one network namespace ({@link HostId}).
     */
    protected static boolean onThisHost(byte[] deviceAddress) {
        return deviceAddress.length >= Long.BYTES && reader(deviceAddress).getLong(0) == HostId.get();
    }

    /** What tells this iface from others of its transport and device, for {@link #toString()}. */
    protected abstract String describe();

    @Override
    public String toString() {
        return transport.name() + "/" + device().name() + describe();
    }
}
