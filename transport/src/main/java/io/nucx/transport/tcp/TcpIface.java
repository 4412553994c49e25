package io.nucx.transport.tcp;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.AdaptiveRecvByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelPromise;
import io.netty.channel.EventLoop;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.handler.codec.CorruptedFrameException;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import io.netty.util.internal.logging.InternalLogger;
import io.netty.util.internal.logging.InternalLoggerFactory;
import io.nucx.transport.AbstractIface;
import io.nucx.transport.AmFrame;
import io.nucx.transport.Capability;
import io.nucx.transport.Device;
import io.nucx.transport.HostId;
import io.nucx.transport.IfaceAttributes;
import io.nucx.transport.IfaceParams;
import io.nucx.transport.IoEngine;
import io.nucx.transport.NucxConfig;
import io.nucx.transport.P2pEndpoint;
import io.nucx.transport.Transport;
import io.nucx.transport.TransportConfig;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.Collections;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * A listening TCP socket on the worker's loop. Accepted and connected lanes get the same pipeline:
 * {@link AmFrameDecoder}, {@link AmFrameEncoder}, then the caller's lane handler.
 *
 * <p>Device address: {@code host id:u64, ip length:u8, ip bytes}. Iface address: {@code port:u16}. A loopback
 * address is reachable only from the same host id (same kernel and network namespace), as in UCT tcp.
 *
 * <p><b>p2p mode</b> (NUCX_TCP_CONNECT=p2p) adds CONNECT_TO_EP: lanes are then connected endpoint to endpoint
 * ({@link #createEndpoint}). A tcp endpoint's address is a token {@code u64} registered in this iface. The side that
 * connects dials the peer's listening socket and sends one frame first, {@code {am id 255, header = token:u64}}
 * ({@link #CONNECT_EP_AM_ID}); the accepting iface hands that connection to the endpoint holding the token (its lane
 * handler replaces the iface's accepted-lane handler) and completes the endpoint's {@link P2pEndpoint#connected()}.
 * A connection naming an unknown token is closed. One TCP connection serves both directions, so only one side dials.
 * The listening socket still takes connect-to-iface lanes (wireup's auxiliary lane).
 */
final class TcpIface extends AbstractIface {

    /** UCX's tcp latency constant, 5.2 us, plus 576 bits on the wire (research/ucx-internals.md §5). */
    private static final double LATENCY_BASE = 5.2e-6;
    /** UCX's tcp per-message overhead. */
    private static final double OVERHEAD = 50e-6;
    /** UCX caps tcp bandwidth at UCX_TCP_MAX_BW = 2200 MB/s. */
    private static final double MAX_BANDWIDTH = 2200e6;
    /** Header room in one frame: the eager FIRST header is 24 bytes; wireup carries its address as payload. */
    static final int MAX_HEADER = 64;
    /** The first frame of a connection dialled to an endpoint (p2p mode); AM ids up to 254 belong to protocols. */
    public static final int CONNECT_EP_AM_ID = 255;
    private static final InternalLogger LOG = InternalLoggerFactory.getInstance(TcpIface.class);

    private final IoEngine mode;
    private final Channel server;
    private final int segSize;
    /** TLS on every lane (NUCX_TCP_TLS), or null. */
    private final TcpTls tls;
    private final boolean p2p;
    /** Large payloads read straight into their place (NUCX_TCP_PLACE, not under TLS). */
    private final boolean place;
    /** Which congestion control each lane gets (NUCX_TCP_CONGESTION). */
    private final TcpCongestion congestion;
    /** A lane whose algorithm could not be set was logged (once per iface). Loop only. */
    private boolean congestionFailureLogged;
    /** p2p endpoints waiting to be reached, by token. Loop only. */
    private final Map<Long, TcpP2pEndpoint> waiting = new HashMap<>();
    /** p2p endpoint tokens are random: a connection naming one must have been told it, not have counted to it. */
    private final SecureRandom tokens = new SecureRandom();

    private TcpIface(Transport transport, IfaceParams params, IoEngine mode, Channel server,
                     IfaceAttributes attributes, byte[] deviceAddress, byte[] ifaceAddress, int segSize, boolean p2p,
                     TcpTls tls, boolean place, TcpCongestion congestion) {
        super(transport, params, attributes, deviceAddress, ifaceAddress);
        this.congestion = congestion;
        this.mode = mode;
        this.server = server;
        this.segSize = segSize;
        this.tls = tls;
        this.p2p = p2p;
        this.place = place;
    }

    static TcpIface open(Transport transport, IfaceParams params) throws Exception {
        NucxConfig config = params.config();
        EventLoop loop = params.eventLoop();
        IoEngine mode = IoEngine.of(loop);
        if (mode == null) {
            throw new IllegalArgumentException("tcp needs an io_uring, epoll or nio event loop; got "
                    + loop.getClass().getName());
        }
        Optional<IoEngine> forced = config.get(TransportConfig.TCP_IO);
        if (forced.isPresent() && forced.get() != mode) {
            throw config.invalid(TransportConfig.TCP_IO, "the worker's event loop runs " + mode.configName()
                    + "; give the worker a " + forced.get().configName() + " event loop group or drop the setting");
        }
        int segSize = (int) (long) config.get(TcpConfig.SEG_SIZE);
        TcpCongestion congestion = TcpCongestion.of(config, mode);
        TcpTls tls = TcpTls.from(config);
        // Not on io_uring: its read is submitted ahead and the kernel writes when data come, so a placed buffer could
        // not be taken back at once (PayloadPlacement.RELINQUISH); epoll and nio read on the loop, one read at a time.
        boolean place = config.get(TcpConfig.PLACE) && tls == null && mode != IoEngine.IO_URING;
        boolean p2p = config.get(TcpConfig.CONNECT) == TcpConfig.Connect.P2P;
        TcpIface[] self = new TcpIface[1]; // accepted lanes look up the iface (its handler, its p2p endpoints)
        InetAddress bind = TcpTransport.bindAddress(config, params.device());
        ServerBootstrap sb = new ServerBootstrap()
                .group(loop, loop)
                .channel(mode.serverChannel())
                .option(ChannelOption.SO_REUSEADDR, true)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childOption(ChannelOption.RCVBUF_ALLOCATOR, readSizes())
                .childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, waterMark(segSize))
                .childHandler(new ChannelInitializer<>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        self[0].initLane(ch, self[0].newAcceptedLaneHandler(), null);
                        if (p2p) {
                            ch.pipeline().addBefore(LANE_HANDLER, "nucx.tcp.ep", self[0].new EpAcceptor());
                        }
                    }
                });
        Channel server = sb.bind(new InetSocketAddress(bind, 0)).sync().channel();
        InetSocketAddress local = (InetSocketAddress) server.localAddress();
        InetAddress advertised = bind.isAnyLocalAddress() ? advertisedAddress() : bind;
        Device device = params.device();
        IfaceAttributes attrs = attributes(device, segSize, p2p, place);
        byte[] ip = advertised.getAddress();
        byte[] dev = packer(9 + ip.length).putLong(HostId.network()).put((byte) ip.length).put(ip).array();
        byte[] iface = packer(2).putShort((short) local.getPort()).array();
        self[0] = new TcpIface(transport, params, mode, server, attrs, dev, iface, segSize, p2p, tls, place,
                congestion);
        return self[0];
    }

    /**
     * Reads per lane per loop turn (Netty's default is 16): with reads of at most {@link #MAX_READ} one lane brings
     * at most 1 MiB per turn, so a peer flooding its socket delays the loop's other lanes and timers by milliseconds,
     * not seconds (the frames a lane handles per turn are bounded apart, NUCX_LANE_BATCH).
     */
    static final int READS_PER_TURN = 4;

    /**
     * The largest read into a lane's own buffer (Netty's adaptive allocator stops at 64 KiB). A frame of a 64 KiB
     * write (a Netty app's body, a perftest message) is 64 KiB and its headers, and a read of 64 KiB left its last
     * bytes for a second read, after which the decoder copied the frame's payload out of the first into one buffer
     * and a third read met an empty socket. A read of up to a tcp segment's frame and what precedes it takes such
     * frames whole (their payloads copied into the place a posted receive gives, else sliced: {@link AmFrameDecoder});
     * the allocator still sizes reads by what they bring, so a lane of short messages keeps small buffers.
     */
    static final int MAX_READ = 256 * 1024;

    /** A lane's read sizes: adaptive, from Netty's minimum and initial guess up to {@link #MAX_READ}. */
    private static RecvByteBufAllocator readSizes() {
        return new AdaptiveRecvByteBufAllocator(AdaptiveRecvByteBufAllocator.DEFAULT_MINIMUM,
                AdaptiveRecvByteBufAllocator.DEFAULT_INITIAL, MAX_READ).maxMessagesPerRead(READS_PER_TURN);
    }

    /**
     * Every tcp lane, connected or accepted: TLS when configured ({@link TcpTls}, with the server's or the client's
     * context), framing, then the owner's handler. (Answers to a read batch are flushed once at its end by those who
     * write them: the lane handler's EP_REMOVED answers, the atomics codec's replies.)
     */
    private void initLane(Channel ch, ChannelHandler laneHandler, InetSocketAddress connectingTo) {
        setCongestion(ch, connectingTo != null ? connectingTo : (InetSocketAddress) ch.remoteAddress());
        if (tls != null) { // first: everything below reads and writes plaintext
            ch.pipeline().addLast("nucx.tls", connectingTo == null ? tls.accepted(ch) : tls.connected(ch,
                    connectingTo));
        }
        AmFrameDecoder decoder = new AmFrameDecoder(MAX_HEADER, segSize, place);
        if (place) { // the decoder sees the socket's own bytes: it may say where the next read goes
            ch.config().setRecvByteBufAllocator(new PlacingRecvAllocator(ch.config().getRecvByteBufAllocator(),
                    decoder));
        }
        ch.pipeline().addLast("nucx.frameDecoder", decoder);
        ch.pipeline().addLast("nucx.frameEncoder", new AmFrameEncoder(attributes())); // its batch is the channel's
        ch.pipeline().addLast(LANE_HANDLER, laneHandler);
    }

    /** Sets the congestion control NUCX_TCP_CONGESTION gives a lane to {@code peer}; a refusal leaves the system's. */
    private void setCongestion(Channel ch, InetSocketAddress peer) {
        String algorithm = peer == null ? null : congestion.forPeer(peer.getAddress());
        if (algorithm == null) {
            return;
        }
        try {
            TcpCongestion.apply(ch, algorithm);
        } catch (RuntimeException e) { // a lane without its algorithm still works: never fail its set-up for this
            if (!congestionFailureLogged) { // e.g. an algorithm outside net.ipv4.tcp_allowed_congestion_control
                congestionFailureLogged = true;
                LOG.warn("tcp lane to {}: could not set congestion control {} (NUCX_TCP_CONGESTION), the lane runs the "
                        + "system's: {}", peer, algorithm, e.getMessage());
            }
        }
    }

    private static WriteBufferWaterMark waterMark(int segSize) {
        int high = maxPlacedFrame(segSize);
        return new WriteBufferWaterMark(high / 2, high);
    }

    /**
     * A lane's write-buffer high water mark, at least two fragments in flight before it reports itself unwritable; and
     * the largest placed frame it sends ({@link IfaceAttributes#maxPlaced}), 256 KiB at the default segment size.
     * Measured on loopback, tag_bw 1 MiB by rendezvous: frames of 128–512 KiB reach 6.0–6.3 GB/s, the whole 1 MiB as
     * one frame 4.1 GB/s in most runs (one over the water mark leaves the lane unwritable for nearly all of its
     * length), and as fast as the others once the water mark is 1 MiB.
     */
    static int maxPlacedFrame(int segSize) {
        return Math.max(256 * 1024, 2 * segSize);
    }

    private static InetAddress advertisedAddress() throws Exception {
        for (NetworkInterface ni : Collections.list(NetworkInterface.getNetworkInterfaces())) {
            if (!ni.isUp() || ni.isLoopback()) {
                continue;
            }
            for (InetAddress a : Collections.list(ni.getInetAddresses())) {
                if (a instanceof Inet4Address) {
                    return a;
                }
            }
        }
        return InetAddress.getLoopbackAddress();
    }

    /**
     * @param place whether lanes read large payloads straight into their place: then a rendezvous may go in frames
     *              larger than a segment, as large as the receiver asks for up to {@link #maxPlacedFrame} (UCT tcp
     *              sends a rendezvous as one PUT_ZCOPY)
     */
    static IfaceAttributes attributes(Device device, int segSize, boolean p2p, boolean place) {
        double bitsPerSecond = linkSpeedBitsPerSecond(device.name());
        int mtu = 1500;
        double bandwidth = Math.min(bitsPerSecond / 8 * (mtu - 40) / (mtu + 38), MAX_BANDWIDTH);
        // AM_ZCOPY: the encoder writes a payload over AmFrameEncoder.COPY_THRESHOLD as its own buffer (a gathering
        // write from the sender's memory); smaller ones it copies next to the header, hence amCopyMax.
        EnumSet<Capability> caps = EnumSet.of(Capability.AM_SHORT, Capability.AM_BCOPY, Capability.AM_ZCOPY,
                Capability.PENDING, Capability.CONNECT_TO_IFACE, Capability.CB_SYNC, Capability.ERRHANDLE_PEER_FAILURE,
                Capability.EP_CHECK);
        if (p2p) {
            caps.add(Capability.CONNECT_TO_EP);
        }
        return new IfaceAttributes(caps,
                Math.min(segSize, 8192), segSize, MAX_HEADER,
                LATENCY_BASE + 576 / bitsPerSecond, 0, 0, bandwidth, OVERHEAD, 0, 0, AmFrameEncoder.COPY_THRESHOLD)
                .withMaxPlaced(place ? maxPlacedFrame(segSize) : 0);
    }

    /** /sys/class/net/DEV/speed in Mb/s; loopback and unknown speeds count as 10 Gb/s. */
    private static double linkSpeedBitsPerSecond(String dev) {
        try {
            long mbps = Long.parseLong(Files.readString(Path.of("/sys/class/net", dev, "speed")).trim());
            if (mbps > 0) {
                return mbps * 1e6;
            }
        } catch (Exception e) {
            // lo and virtual devices have no speed
        }
        return 10e9;
    }

    @Override
    public boolean isReachable(byte[] remoteDevice, byte[] remoteIface) {
        InetSocketAddress remote = remoteSocketAddress(remoteDevice, remoteIface);
        if (remote == null) {
            return false;
        }
        byte[] localDevice = deviceAddress();
        if (remote.getAddress().getAddress().length != localDevice.length - 9) {
            return false; // IPv4 does not reach IPv6 here
        }
        // Loopback reaches only this kernel's network namespace: the same boot id and network namespace.
        return !remote.getAddress().isLoopbackAddress()
                || (remoteDevice.length >= Long.BYTES && reader(remoteDevice).getLong(0) == HostId.network());
    }

    /** The remote socket address, or null when the bytes are not a tcp address. */
    static InetSocketAddress remoteSocketAddress(byte[] remoteDevice, byte[] remoteIface) {
        if (remoteDevice.length < 9 || remoteIface.length != 2) {
            return null;
        }
        ByteBuffer dev = reader(remoteDevice);
        dev.getLong();
        int ipLength = dev.get() & 0xff;
        if ((ipLength != 4 && ipLength != 16) || dev.remaining() != ipLength) {
            return null;
        }
        byte[] ip = new byte[ipLength];
        dev.get(ip);
        int port = reader(remoteIface).getShort() & 0xffff;
        try {
            return new InetSocketAddress(InetAddress.getByAddress(ip), port);
        } catch (UnknownHostException e) {
            return null;
        }
    }

    private long newToken() {
        long t;
        do {
            t = tokens.nextLong();
        } while (t == 0 || waiting.containsKey(t));
        return t;
    }

    @Override
    public P2pEndpoint createEndpoint(ChannelHandler laneHandler) {
        assert eventLoop().inEventLoop();
        if (!p2p) {
            throw new UnsupportedOperationException("tcp connects endpoint to endpoint only with NUCX_TCP_CONNECT=p2p");
        }
        TcpP2pEndpoint ep = new TcpP2pEndpoint(newToken(), laneHandler);
        waiting.put(ep.token, ep);
        return ep;
    }

    /** A tcp endpoint of p2p mode: a token others dial to, or the dialling side. */
    private final class TcpP2pEndpoint implements P2pEndpoint {
        final long token;
        final ChannelHandler laneHandler;
        final Promise<Channel> connected = eventLoop().newPromise();

        TcpP2pEndpoint(long token, ChannelHandler laneHandler) {
            this.token = token;
            this.laneHandler = laneHandler;
        }

        @Override
        public byte[] address() {
            return packer(8).putLong(token).array();
        }

        @Override
        public ChannelFuture connect(byte[] remoteDevice, byte[] remoteIface, byte[] remoteEpAddress) {
            waiting.remove(token, this); // we dial: nobody will dial us
            if (remoteEpAddress.length != 8) {
                return server.newFailedFuture(new IllegalArgumentException("not a tcp endpoint address: "
                        + Arrays.toString(remoteEpAddress)));
            }
            long remoteToken = reader(remoteEpAddress).getLong();
            ChannelFuture dial = TcpIface.this.connect(remoteDevice, remoteIface, laneHandler);
            ChannelPromise done = dial.channel().newPromise();
            dial.addListener((ChannelFutureListener) f -> {
                if (!f.isSuccess()) {
                    done.tryFailure(f.cause());
                    return;
                }
                // First on the connection, so the peer's iface knows the endpoint before any frame of the lane.
                f.channel().writeAndFlush(AmFrame.of(CONNECT_EP_AM_ID,
                        f.channel().alloc().buffer(8).writeLongLE(remoteToken)), f.channel().voidPromise());
                connected.trySuccess(f.channel());
                done.trySuccess();
            });
            return done;
        }

        @Override
        public Future<Channel> connected() {
            return connected;
        }

        @Override
        public void close() {
            waiting.remove(token, this);
            connected.tryFailure(new ClosedChannelException());
        }
    }

    /**
     * First handler of an accepted connection in p2p mode: a first frame naming an endpoint token gives the
     * connection to that endpoint; any other first frame is a connect-to-iface lane, passed on untouched.
     */
    private final class EpAcceptor extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (!(msg instanceof AmFrame frame) || frame.amId() != CONNECT_EP_AM_ID) {
                ctx.pipeline().remove(this);
                ctx.fireChannelRead(msg);
                return;
            }
            long token;
            try {
                if (frame.header().readableBytes() != 8 || frame.payload().isReadable()) {
                    throw new CorruptedFrameException("endpoint connect frame with a "
                            + frame.header().readableBytes() + "-byte header and " + frame.payload().readableBytes()
                            + "-byte payload from " + ctx.channel().remoteAddress() + " (expected 8 and 0)");
                }
                token = frame.header().getLongLE(frame.header().readerIndex());
            } finally {
                frame.release();
            }
            TcpP2pEndpoint ep = waiting.remove(token);
            if (ep == null) {
                LOG.warn("closing connection from {}: it names tcp endpoint #{}, which {} does not wait for",
                        ctx.channel().remoteAddress(), token, TcpIface.this);
                ctx.close();
                return;
            }
            ctx.pipeline().replace(LANE_HANDLER, LANE_HANDLER, ep.laneHandler);
            ctx.pipeline().remove(this);
            if (!ep.connected.trySuccess(ctx.channel())) {
                ctx.close(); // the endpoint closed meanwhile
            }
        }
    }

    @Override
    public ChannelFuture connect(byte[] remoteDevice, byte[] remoteIface, ChannelHandler laneHandler) {
        InetSocketAddress remote = remoteSocketAddress(remoteDevice, remoteIface);
        if (remote == null) {
            return server.newFailedFuture(new IllegalArgumentException("not a tcp address: device "
                    + Arrays.toString(remoteDevice) + ", iface " + Arrays.toString(remoteIface)));
        }
        return new Bootstrap()
                .group(eventLoop())
                .channel(mode.socketChannel())
                .option(ChannelOption.TCP_NODELAY, true)
                .option(ChannelOption.RCVBUF_ALLOCATOR, readSizes())
                .option(ChannelOption.WRITE_BUFFER_WATER_MARK, waterMark(segSize))
                .handler(new ChannelInitializer<>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        initLane(ch, laneHandler, remote);
                    }
                })
                .connect(remote);
    }

    @Override
    protected Future<?> doClose() {
        return server.close();
    }

    @Override
    protected String describe() {
        return "(" + mode.configName() + (p2p ? " p2p " : " ") + (tls != null ? "tls/" + tls.provider().name()
                .toLowerCase(Locale.ROOT) + " " : "") + server.localAddress() + ")";
    }
}
