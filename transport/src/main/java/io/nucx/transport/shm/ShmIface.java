package io.nucx.transport.shm;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelPromise;
import io.netty.channel.DefaultChannelPromise;
import io.netty.channel.EventLoop;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.util.concurrent.Future;
import io.nucx.transport.AbstractIface;
import io.nucx.transport.Capability;
import io.nucx.transport.HostId;
import io.nucx.transport.IfaceAttributes;
import io.nucx.transport.IfaceParams;
import io.nucx.transport.NucxConfig;
import io.nucx.transport.Transport;
import io.nucx.transport.IoEngine;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayDeque;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A shm iface: a Unix socket {@code /dev/shm/nucx-<pid>-<id>.sock} on which peers of the same host set up ring
 * pairs ({@link ShmHandshake}). Device address: the host id (u64). Iface address: pid (u32) and iface id (u32),
 * from which the socket's path follows. Reachable when the host ids match (UCX's rule: same boot id and network
 * namespace) and the socket exists in our {@code /dev/shm} (same mount namespace).
 */
final class ShmIface extends AbstractIface {

    private static final AtomicLong NEXT_ID = new AtomicLong(1);
    /**
     * UCX's posix transport on this machine kind: 80 ns latency, 10 ns overhead, about 12 GB/s. The bandwidth ranks
     * lanes and splits a rendezvous over several; over shm alone, the cost of moving a payload is the two copies at the
     * measured copy rate ({@link io.nucx.transport.HandOffRate}).
     */
    static final double LATENCY = 80e-9;
    static final double OVERHEAD = 10e-9;
    static final double BANDWIDTH = 12179e6;
    static final int MAX_HEADER = 256;

    private final IoEngine engine;
    private final Path dir;
    private final ShmAddress local;
    private final int ringSize;
    private final int segSize;
    private final long handshakeTimeoutNanos;
    /** NUCX_SHM_HANDSHAKES: accepted connections whose handshake may be under way at once. */
    private final int maxHandshakes;
    /** The listening socket; set once bound (its accepted lanes need this iface first). */
    private Channel server;
    /**
     * Handshakes of accepted connections under way. At {@link #maxHandshakes} the server stops accepting, so a burst
     * of legitimate connects (a peer opening hundreds of endpoints) waits in the kernel's backlog instead of being
     * refused, and connections that stall hold only their slot until the handshake timeout. Loop only.
     */
    private int pendingHandshakes;
    /** Connections accepted while every slot was taken, in arrival order. Loop only. */
    private final ArrayDeque<Channel> waiting = new ArrayDeque<>();
    /**
     * Doorbell sockets not yet a lane's, both ways: accepted ones in their handshake or waiting for a slot, ours in
     * their connect's handshake. The iface's close ends them (a lane's connect fails then), so none is left for the
     * loop's end to close (Netty warns of each there). Loop only.
     */
    private final Set<Channel> handshaking = new HashSet<>();

    private ShmIface(Transport transport, IfaceParams params, IoEngine engine, Path dir, ShmAddress local,
                     int ringSize, int segSize, double copyBandwidth, long handshakeTimeoutNanos, int maxHandshakes) {
        // Every payload is copied into the ring as it is written (amCopyMax: all), so no AM zero-copy, as UCX's mm.
        // AM_SHORT up to a whole record, where UCX's mm stops at its 128-byte FIFO element: a record is
        // variable-length, and a short one is no frame on either side (256 B to 8 KiB: 29-50 % less time per message
        // than as frames).
        super(transport, params, new IfaceAttributes(
                EnumSet.of(Capability.AM_SHORT, Capability.AM_BCOPY, Capability.PENDING, Capability.CONNECT_TO_IFACE,
                        Capability.CB_SYNC, Capability.ERRHANDLE_PEER_FAILURE),
                segSize, segSize, MAX_HEADER, LATENCY, 0, BANDWIDTH, 0, OVERHEAD, 0, 0, Integer.MAX_VALUE)
                .withCopyBandwidth(copyBandwidth),
                packer(8).putLong(HostId.get()).array(),
                packer(8).putInt((int) local.pid()).putInt((int) local.ifaceId()).array());
        this.engine = engine;
        this.dir = dir;
        this.local = local;
        this.ringSize = ringSize;
        this.segSize = segSize;
        this.handshakeTimeoutNanos = handshakeTimeoutNanos;
        this.maxHandshakes = maxHandshakes;
    }

    static ShmIface open(Transport transport, IfaceParams params, Path dir) throws Exception {
        EventLoop loop = params.eventLoop();
        IoEngine engine = IoEngine.of(loop);
        if (!ShmTransport.isCompatible(loop) || engine == null) {
            throw new IllegalStateException("shm needs an event loop made with ShmIoHandler.newFactory(...) around "
                    + "an io_uring, epoll or NIO handler; this worker's loop is " + loop.getClass().getName());
        }
        NucxConfig config = params.config();
        int ringSize = ShmConfig.ringSize(config);
        int segSize = ShmConfig.segSize(config);
        ShmFiles.reapStale(dir);
        ShmAddress local = new ShmAddress(ShmFiles.pid(), NEXT_ID.getAndIncrement());
        Path socket = ShmFiles.socket(dir, local.pid(), local.ifaceId());
        Files.deleteIfExists(socket); // ours by name: a leftover of an earlier process with our pid
        long handshakeTimeout = config.get(ShmConfig.HANDSHAKE_TIMEOUT);
        ShmIface iface = new ShmIface(transport, params, engine, dir, local, ringSize, segSize,
                ShmConfig.copyBandwidth(config), handshakeTimeout, config.get(ShmConfig.HANDSHAKES));
        ServerBootstrap sb = new ServerBootstrap()
                .group(loop, loop)
                .channel(engine.serverDomainSocketChannel())
                .childHandler(new ChannelInitializer<>() {
                    @Override
                    protected void initChannel(Channel doorbell) {
                        iface.admit(doorbell);
                    }
                });
        iface.server = sb.bind(engine.domainSocketAddress(socket)).sync().channel();
        // Only this user may connect (the kernel checks write permission on connect); rings are checked too.
        Files.setPosixFilePermissions(socket, PosixFilePermissions.fromString("rw-------"));
        return iface;
    }

    /**
     * An accepted connection: its handshake starts now if a slot is free, else it waits, unread and holding no
     * ring, for one (only connections accepted in the same turn as the bound was reached: accepting pauses there).
     */
    private void admit(Channel doorbell) {
        handshaking(doorbell);
        if (pendingHandshakes < maxHandshakes) {
            startHandshake(doorbell);
            return;
        }
        doorbell.config().setAutoRead(false);
        waiting.add(doorbell);
        doorbell.closeFuture().addListener(f -> waiting.remove(doorbell));
    }

    private void startHandshake(Channel doorbell) {
        if (++pendingHandshakes == maxHandshakes) {
            server.config().setAutoRead(false);
        }
        doorbell.pipeline().addLast("nucx.shm.handshake", new ShmHandshake(false, dir, local, ringSize,
                handshakeTimeoutNanos, r -> {
                    handshaking.remove(doorbell); // the lane's from here: it closes with it
                    handshakeEnded();
                    ShmChannel ch = newChannel();
                    ch.pipeline().addLast(LANE_HANDLER, newAcceptedLaneHandler());
                    attach(ch, r, doorbell).addListener(f -> {
                        if (!f.isSuccess()) {
                            doorbell.close();
                        }
                    });
                }, cause -> handshakeEnded()));
    }

    /** {@code doorbell} is in a handshake, or waits for one: until it closes or becomes a lane's. */
    private void handshaking(Channel doorbell) {
        handshaking.add(doorbell);
        doorbell.closeFuture().addListener(f -> handshaking.remove(doorbell));
    }

    /** A handshake finished or failed: its slot goes to a waiting connection, else accepting goes on. */
    private void handshakeEnded() {
        pendingHandshakes--;
        while (pendingHandshakes < maxHandshakes && !waiting.isEmpty()) {
            Channel next = waiting.poll();
            if (next.isOpen()) {
                startHandshake(next);
                next.config().setAutoRead(true); // admit() paused it; its handshake reads from here
            }
        }
        if (pendingHandshakes < maxHandshakes && server.isOpen() && !server.config().isAutoRead()) {
            server.config().setAutoRead(true);
        }
    }

    private ShmChannel newChannel() {
        ShmChannel ch = new ShmChannel(local, attributes());
        int high = Math.max(256 * 1024, 2 * segSize);
        ch.config().setWriteBufferWaterMark(new WriteBufferWaterMark(high / 2, high));
        return ch;
    }

    /** Hands the rings to the channel, ties its life to the doorbell socket's, and registers it. */
    private static ChannelFuture attach(ShmChannel ch, ShmHandshake.Result r, Channel doorbell) {
        ch.connect(r.peer(), r.in(), r.out(), doorbell);
        doorbell.closeFuture().addListener(f -> ch.peerGone());
        return doorbell.eventLoop().register(ch);
    }

    private Path socketOf(byte[] remoteIface) {
        ByteBuffer b = reader(remoteIface);
        return ShmFiles.socket(dir, Integer.toUnsignedLong(b.getInt()), Integer.toUnsignedLong(b.getInt()));
    }

    @Override
    public boolean isReachable(byte[] remoteDevice, byte[] remoteIface) {
        return remoteDevice.length == 8 && remoteIface.length == 8 && onThisHost(remoteDevice)
                && ownSocket(socketOf(remoteIface));
    }

    /** Whether {@code socket} exists and belongs to this process's user: shm joins processes of one user only. */
    private static boolean ownSocket(Path socket) {
        try {
            return (int) Files.getAttribute(socket, "unix:uid", LinkOption.NOFOLLOW_LINKS)
                    == SpscRing.ownUid();
        } catch (IOException | UnsupportedOperationException e) {
            return false;
        }
    }

    @Override
    public ChannelFuture connect(byte[] remoteDevice, byte[] remoteIface, ChannelHandler laneHandler) {
        ShmChannel ch = newChannel();
        ChannelPromise promise = new DefaultChannelPromise(ch, eventLoop());
        if (!isReachable(remoteDevice, remoteIface)) {
            ch.unsafe().closeForcibly();
            return promise.setFailure(new IOException("shm iface " + (remoteIface.length == 8
                    ? socketOf(remoteIface) : "(bad address)") + " is not reachable from this host"));
        }
        ch.pipeline().addLast(LANE_HANDLER, laneHandler);
        Path socket = socketOf(remoteIface);
        Bootstrap b = new Bootstrap()
                .group(eventLoop())
                .channel(engine.domainSocketChannel())
                .handler(new ChannelInitializer<>() {
                    @Override
                    protected void initChannel(Channel doorbell) {
                        handshaking(doorbell);
                        doorbell.pipeline().addLast("nucx.shm.handshake", new ShmHandshake(true, dir, local,
                                ringSize, handshakeTimeoutNanos, r -> {
                                    handshaking.remove(doorbell); // the lane's from here: it closes with it
                                    attach(ch, r, doorbell).addListener(f -> {
                                        if (f.isSuccess()) {
                                            promise.trySuccess();
                                        } else {
                                            doorbell.close();
                                            promise.tryFailure(f.cause());
                                        }
                                    });
                                }, cause -> {
                                    ch.unsafe().closeForcibly();
                                    promise.tryFailure(cause);
                                }));
                    }
                });
        b.connect(engine.domainSocketAddress(socket)).addListener((ChannelFuture f) -> {
            if (!f.isSuccess()) {
                ch.unsafe().closeForcibly();
                promise.tryFailure(new IOException("cannot connect to shm iface " + socket + ": " + f.cause(),
                        f.cause()));
            }
        });
        return promise;
    }

    @Override
    protected Future<?> doClose() {
        Future<?> closed = server.close().addListener(f -> Files.deleteIfExists(ShmFiles.socket(dir, local.pid(),
                local.ifaceId())));
        if (eventLoop().inEventLoop()) {
            endHandshakes();
        } else {
            try {
                eventLoop().execute(this::endHandshakes);
            } catch (RejectedExecutionException ended) {
                // the loop has ended: it closed every socket it had
            }
        }
        return closed;
    }

    private void endHandshakes() {
        for (Channel doorbell : List.copyOf(handshaking)) {
            ShmHandshake h = doorbell.pipeline().get(ShmHandshake.class);
            if (h != null) { // a connect's fails saying so, not "the peer closed the socket"
                h.abort(doorbell, new IOException("shm iface " + describe() + " closed during the handshake with "
                        + doorbell.remoteAddress()));
            }
            doorbell.close();
        }
    }

    @Override
    protected String describe() {
        return "#" + local.ifaceId();
    }
}
