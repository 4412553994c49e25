package io.nucx;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.netty.channel.AbstractChannel;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelMetadata;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.ChannelPromise;
import io.netty.channel.ConnectTimeoutException;
import io.netty.channel.EventLoop;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.channel.socket.ChannelInputShutdownReadComplete;
import io.netty.channel.socket.ChannelOutputShutdownException;
import io.netty.channel.socket.ServerSocketChannel;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.UnsupportedMessageTypeException;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.ScheduledFuture;
import io.nucx.protocol.stream.StreamCodec;
import io.nucx.protocol.stream.StreamData;
import io.nucx.transport.IoEngine;
import io.nucx.wireup.DefaultWorker;

import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.channels.AlreadyConnectedException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ConnectionPendingException;
import java.nio.channels.UnresolvedAddressException;
import java.nio.channels.UnsupportedAddressTypeException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * A socket-like channel over an endpoint's byte stream, for existing Netty code: {@code Bootstrap}
 * ({@code .channel(NucxChannel.class)} on a {@link NucxEventLoopGroup}) connects it to a {@link NucxServerChannel}'s
 * host:port, whose {@code ServerBootstrap} accepts its peer; bytes written on one arrive at the other in order,
 * whatever the endpoint's lanes (shm between processes of one host, tcp across) and protocols (eager or rendezvous,
 * zero-copy where it pays). It is a {@link SocketChannel}: options, attributes, {@code parent()}, half-closure,
 * auto-read and backpressure behave as on {@code NioSocketChannel}.
 *
 * <p><b>Connecting</b> (UCX's sockaddr client-server flow): a TCP connection to host:port exchanges worker addresses
 * ({@link ListenerHandshake}); then the worker of this channel's loop ({@link LoopWorkers}, started on demand)
 * connects an endpoint to the worker of the accepted channel's loop, and wireup chooses its lanes as for any endpoint.
 * The connect future completes when the peer has answered; {@code CONNECT_TIMEOUT_MILLIS} bounds it all.
 *
 * <p><b>Data.</b> Writes ({@code ByteBuf} only) go to the endpoint's stream ({@link StreamCodec}) as long as its
 * receive window has room and its lanes are writable; the rest waits in this channel's outbound buffer, which turns
 * it unwritable past its high water mark, as a socket channel's does when the kernel's buffer is full. A write's
 * future completes when the stream has taken it. Reading: this channel's {@code read()} (auto-read) is the endpoint's,
 * so a reader that stops reading stops its peer after one window.
 *
 * <p><b>Ends.</b> {@link #shutdownOutput()} ends the stream (the peer sees its input shut down after the last byte);
 * {@link #close()} ends it too, then closes the endpoint gracefully (it waits, bounded by NUCX_KEEPALIVE_TIMEOUT, for
 * the peer to read everything). The peer's end of stream closes this channel, or with ALLOW_HALF_CLOSURE fires
 * {@code ChannelInputShutdownEvent}. An endpoint that fails (peer gone, keepalive) fires its
 * {@link EndpointException} as {@code exceptionCaught}, then the channel closes.
 */
public final class NucxChannel extends AbstractChannel implements SocketChannel {

    private static final ChannelMetadata METADATA = new ChannelMetadata(false, 16);

    private enum State { OPEN, CONNECTING, CONNECTED, CLOSED }

    private final NucxChannelConfig config = new NucxChannelConfig(this);
    /** A read asked of this channel before it was connected, to be passed to its endpoint then. Loop only. */
    private boolean readAskedBeforeActive;
    private volatile State state = State.OPEN;
    private volatile InetSocketAddress local;
    private volatile InetSocketAddress remote;
    /** The TCP connection of the listener exchange, until the endpoint is there. */
    private Channel exchange;
    /** Accepted side: the worker that waits for the client's endpoint with {@link #token}. */
    private DefaultWorker acceptingWorker;
    private int token = -1;
    private Endpoint endpoint;
    private StreamCodec stream;
    private ChannelPromise connectPromise;
    private ScheduledFuture<?> connectTimeout;
    private volatile boolean inputShutdown;
    private volatile boolean outputShutdown;
    /**
     * Inside {@link #doWrite}: buffers it gathered have had their promises completed and are not on the endpoint yet,
     * so a listener of those promises that shuts the output down or closes the channel must not send the end ahead of
     * them; the end ({@link #endAfterWrite}) and the endpoint's close ({@link #closeAfterWrite}) wait for doWrite.
     */
    private boolean writing;
    private boolean endAfterWrite;
    private boolean closeAfterWrite;

    /** A channel to connect, as {@code Bootstrap} makes it. */
    public NucxChannel() {
        super(null);
    }

    /** A channel the listener of {@code parent} accepted over {@code exchange}, once the client said HELLO. */
    NucxChannel(NucxServerChannel parent, Channel exchange) {
        super(parent);
        this.exchange = exchange;
        this.local = parent.localAddress();
        this.remote = (InetSocketAddress) exchange.remoteAddress();
        this.state = State.CONNECTING;
    }

    // ------------------------------------------------------------ SocketChannel

    @Override
    public ServerSocketChannel parent() {
        return (ServerSocketChannel) super.parent();
    }

    @Override
    public NucxChannelConfig config() {
        return config;
    }

    @Override
    public ChannelMetadata metadata() {
        return METADATA;
    }

    @Override
    public boolean isOpen() {
        return state != State.CLOSED;
    }

    @Override
    public boolean isActive() {
        return state == State.CONNECTED;
    }

    @Override
    public InetSocketAddress localAddress() {
        return (InetSocketAddress) super.localAddress();
    }

    @Override
    public InetSocketAddress remoteAddress() {
        return (InetSocketAddress) super.remoteAddress();
    }

    @Override
    protected SocketAddress localAddress0() {
        return local;
    }

    @Override
    protected SocketAddress remoteAddress0() {
        return remote;
    }

    /** The endpoint under this channel, once connected (null before); for tools and tests. */
    public Endpoint endpoint() {
        return endpoint;
    }

    @Override
    protected boolean isCompatible(EventLoop loop) {
        // Any loop of a TCP engine can host a worker; shm lanes need a loop of NucxEventLoopGroup's engine.
        return IoEngine.of(loop) != null;
    }

    @Override
    protected AbstractUnsafe newUnsafe() {
        return new NucxUnsafe();
    }

    // ------------------------------------------------------------ accepting (the server side)

    @Override
    protected void doRegister(ChannelPromise promise) {
        promise.setSuccess();
        if (parent() != null && state == State.CONNECTING && acceptingWorker == null && token < 0) {
            accept();
        }
    }

    /**
     * Registered on its loop: that loop's worker waits for the client's endpoint under a token, which the ACCEPT
     * gives the client with the worker's address.
     */
    private void accept() {
        exchange.closeFuture().addListener(f -> eventLoop().execute(() -> {
            if (endpoint == null && isOpen()) {
                close(); // the client gave up before its endpoint came
            }
        }));
        LoopWorkers.of(eventLoop()).addListener(f -> {
            if (!isOpen()) {
                return;
            }
            if (!f.isSuccess()) {
                exchange.writeAndFlush(ListenerHandshake.reject(exchange.alloc(), "no worker could start on the "
                        + "accepting loop: " + f.cause())).addListener(ChannelFutureListener.CLOSE);
                close();
                return;
            }
            DefaultWorker w = (DefaultWorker) f.getNow();
            int t = w.expectListened(this::endpointAccepted);
            if (t < 0) {
                exchange.writeAndFlush(ListenerHandshake.reject(exchange.alloc(), "65,536 connections are waiting "
                        + "for their endpoint on worker " + w.name())).addListener(ChannelFutureListener.CLOSE);
                close();
                return;
            }
            acceptingWorker = w;
            token = t;
            exchange.writeAndFlush(ListenerHandshake.accept(exchange.alloc(), t, w.address()));
        });
    }

    /** The client's endpoint arrived (its REQUEST, answered already): the channel is connected. */
    private void endpointAccepted(Endpoint ep) {
        token = -1;
        if (!isOpen()) {
            ep.close();
            return;
        }
        attach(ep);
        exchange.close();
        state = State.CONNECTED;
        passReadAskedBeforeActive();
        pipeline().fireChannelActive();
    }

    // ------------------------------------------------------------ connecting (the client side)

    private final class NucxUnsafe extends AbstractUnsafe {
        @Override
        public void connect(SocketAddress remoteAddress, SocketAddress localAddress, ChannelPromise promise) {
            if (!promise.setUncancellable() || !ensureOpen(promise)) {
                return;
            }
            if (state == State.CONNECTED) {
                promise.setFailure(new AlreadyConnectedException());
                return;
            }
            if (state == State.CONNECTING) {
                promise.setFailure(new ConnectionPendingException());
                return;
            }
            if (!(remoteAddress instanceof InetSocketAddress to)) {
                promise.setFailure(new UnsupportedAddressTypeException());
                return;
            }
            if (to.isUnresolved()) {
                promise.setFailure(new UnresolvedAddressException());
                return;
            }
            state = State.CONNECTING;
            remote = to;
            connectPromise = promise;
            int timeout = config.getConnectTimeoutMillis();
            if (timeout > 0) {
                connectTimeout = eventLoop().schedule(() -> connectFailed(new ConnectTimeoutException(
                        "connection timed out after " + timeout + " ms: " + to)), timeout, TimeUnit.MILLISECONDS);
            }
            LoopWorkers.of(eventLoop()).addListener(f -> {
                if (connectPromise == null) {
                    return;
                }
                if (!f.isSuccess()) {
                    connectFailed(connectError(to, "no nucx worker could start on this loop: " + f.cause(),
                            f.cause()));
                    return;
                }
                openExchange((Worker) f.getNow(), to, localAddress);
            });
        }

        /** Writes the outbound buffer's flushed messages that the stream takes now (credit came, lanes drained). */
        void resumeWrites() {
            flush0();
        }
    }

    private void openExchange(Worker worker, InetSocketAddress to, SocketAddress localAddress) {
        IoEngine engine = IoEngine.of(eventLoop());
        Bootstrap b = new Bootstrap().group(eventLoop()).channel(engine.socketChannel())
                .handler(new ClientExchange((DefaultWorker) worker, to));
        ChannelFuture f = localAddress != null ? b.connect(to, localAddress) : b.connect(to);
        exchange = f.channel();
        f.addListener((ChannelFutureListener) done -> {
            if (!done.isSuccess()) {
                connectFailed(connectError(to, "no nucx listener answered: " + done.cause(), done.cause()));
                return;
            }
            if (connectPromise == null) {
                done.channel().close();
                return;
            }
            local = (InetSocketAddress) done.channel().localAddress();
            done.channel().writeAndFlush(ListenerHandshake.hello(done.channel().alloc()));
        });
    }

    /** The client's side of the exchange: it waits for ACCEPT, then connects the endpoint. */
    private final class ClientExchange extends ChannelInitializer<Channel> {
        private final DefaultWorker worker;
        private final InetSocketAddress to;

        ClientExchange(DefaultWorker worker, InetSocketAddress to) {
            this.worker = worker;
            this.to = to;
        }

        @Override
        protected void initChannel(Channel ch) {
            ch.pipeline().addLast(ListenerHandshake.decoder(), new ChannelInboundHandlerAdapter() {
                @Override
                public void channelRead(ChannelHandlerContext ctx, Object msg) {
                    ByteBuf frame = (ByteBuf) msg;
                    try {
                        int type = ListenerHandshake.read(frame);
                        if (type == ListenerHandshake.ACCEPT && frame.readableBytes() > 2) {
                            int t = frame.readUnsignedShort();
                            byte[] address = new byte[frame.readableBytes()];
                            frame.readBytes(address);
                            accepted(worker, WorkerAddress.decode(address), t);
                        } else if (type == ListenerHandshake.REJECT) {
                            connectFailed(connectError(to, "the listener refused: "
                                    + frame.toString(StandardCharsets.UTF_8), null));
                        } else {
                            connectFailed(connectError(to, "unexpected listener message type " + type, null));
                        }
                    } catch (RuntimeException e) {
                        connectFailed(connectError(to, "the peer at this address does not speak nucx: "
                                + e.getMessage(), e));
                    } finally {
                        frame.release();
                    }
                }

                @Override
                public void channelInactive(ChannelHandlerContext ctx) {
                    if (endpoint == null) {
                        connectFailed(connectError(to, "the listener closed the connection before accepting", null));
                    }
                }

                @Override
                public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
                    if (endpoint == null) {
                        connectFailed(connectError(to, cause.toString(), cause));
                    }
                    ctx.close();
                }
            });
        }
    }

    /** ACCEPT: connect an endpoint to the accepting worker with the token; connected when the peer has answered. */
    private void accepted(DefaultWorker worker, WorkerAddress address, int t) {
        if (connectPromise == null || endpoint != null) {
            return;
        }
        Endpoint ep;
        try {
            ep = worker.connectListened(address, worker.defaultErrorMode(), t);
        } catch (RuntimeException e) {
            connectFailed(connectError(remote, "cannot reach the accepting worker: " + e.getMessage(), e));
            return;
        }
        attach(ep);
        ep.wireupFuture().addListener(f -> {
            if (!f.isSuccess()) {
                connectFailed(connectError(remote, f.cause().getMessage(), f.cause()));
                return;
            }
            ChannelPromise p = connectPromise;
            if (p == null) {
                return;
            }
            connectPromise = null;
            if (connectTimeout != null) {
                connectTimeout.cancel(false);
            }
            exchange.close();
            state = State.CONNECTED;
            passReadAskedBeforeActive();
            boolean promised = p.trySuccess();
            pipeline().fireChannelActive();
            if (!promised) {
                close(); // cancelled meanwhile
            }
        });
    }

    private static ConnectException connectError(InetSocketAddress to, String why, Throwable cause) {
        ConnectException e = new ConnectException("nucx connect to " + to + " failed: " + why);
        if (cause != null) {
            e.initCause(cause);
        }
        return e;
    }

    private void connectFailed(Throwable cause) {
        ChannelPromise p = connectPromise;
        if (p == null) {
            return;
        }
        connectPromise = null;
        if (connectTimeout != null) {
            connectTimeout.cancel(false);
        }
        close(); // closed by the time the caller sees the failure, as a socket whose connect failed
        p.tryFailure(cause);
    }

    // ------------------------------------------------------------ the endpoint below

    /** The endpoint carries this channel's stream from now on; its pipeline ends with the {@link Bridge}. */
    private void attach(Endpoint ep) {
        endpoint = ep;
        stream = ep.pipeline().get(StreamCodec.class);
        ep.config().setAutoRead(inputShutdown); // this channel's read() paces the stream (see shutdownInput)
        ep.pipeline().addLast("nucx.channel", new Bridge());
        ep.closeFuture().addListener(f -> endpointClosed());
    }

    private void endpointClosed() {
        if (!isOpen()) {
            return;
        }
        Future<Void> error = endpoint.errorFuture();
        if (error.isDone() && !error.isSuccess() && !inputShutdown && isActive()) {
            pipeline().fireExceptionCaught(error.cause()); // as a socket reports a reset before it closes
        }
        close();
    }

    /**
     * The tail of the endpoint's pipeline: the stream's bytes, its read batches, its end and the endpoint's
     * writability go on to this channel.
     */
    private final class Bridge extends ChannelInboundHandlerAdapter {
        private boolean delivered;

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (msg instanceof ByteBuf && isOpen() && !inputShutdown) {
                delivered = true;
                pipeline().fireChannelRead(msg);
            } else {
                ReferenceCountUtil.release(msg); // after shutdownInput, or not the stream's (a tagged message)
            }
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            if (delivered) {
                delivered = false;
                pipeline().fireChannelReadComplete();
            }
            resumeWrites(); // credit comes in read batches
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            if (evt instanceof ChannelInputShutdownEvent) {
                peerEnded();
            }
            ReferenceCountUtil.release(evt);
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            resumeWrites();
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            pipeline().fireExceptionCaught(cause);
        }
    }

    private void resumeWrites() {
        if (isActive()) {
            ((NucxUnsafe) unsafe()).resumeWrites();
        }
    }

    /** The peer ended its stream after its last byte: close, or with half-closure allowed, shut the input. */
    private void peerEnded() {
        if (!isOpen() || inputShutdown) {
            return;
        }
        if (config.isAllowHalfClosure()) {
            inputShutdown = true;
            pipeline().fireUserEventTriggered(ChannelInputShutdownEvent.INSTANCE);
            pipeline().fireUserEventTriggered(ChannelInputShutdownReadComplete.INSTANCE);
        } else {
            inputShutdown = true;
            close();
        }
    }

    // ------------------------------------------------------------ AbstractChannel

    @Override
    protected void doBind(SocketAddress localAddress) {
        throw new UnsupportedOperationException("a NucxChannel is bound by its connect (give the local address to "
                + "connect(remote, local) for the exchange connection)");
    }

    @Override
    protected void doDisconnect() {
        doClose();
    }

    @Override
    protected void doClose() {
        State was = state;
        state = State.CLOSED;
        if (connectTimeout != null) {
            connectTimeout.cancel(false);
        }
        ChannelPromise p = connectPromise;
        if (p != null) {
            connectPromise = null;
            p.tryFailure(new ClosedChannelException());
        }
        if (token >= 0 && acceptingWorker != null) {
            acceptingWorker.cancelListened(token);
            token = -1;
        }
        if (exchange != null) {
            exchange.close();
        }
        endpointReadsByItself();
        // the peer reads to the end, then sees it
        endEndpoint(!outputShutdown && was == State.CONNECTED, true);
    }

    /**
     * Nothing reads any more (closed, or input shut down): the endpoint reads by itself and the Bridge drops what
     * comes, so the peer's window keeps coming back and its end is acknowledged (STREAM_FIN_ACK), as a closed socket
     * does not hold its peer up.
     */
    private void endpointReadsByItself() {
        Endpoint ep = endpoint;
        if (ep != null && ep.isOpen()) {
            ep.config().setAutoRead(true);
        }
    }

    /**
     * Ends the stream ({@code end}) and closes the endpoint ({@code close}), or, asked inside {@link #doWrite}, once
     * it has handed the endpoint what it took.
     */
    private void endEndpoint(boolean end, boolean close) {
        if (writing) {
            endAfterWrite |= end;
            closeAfterWrite |= close;
            return;
        }
        Endpoint ep = endpoint;
        if (ep != null && ep.isOpen()) {
            if (end) {
                ep.writeAndFlush(StreamData.end(), noNotice(ep));
            }
            if (close) {
                ep.close();
            }
        }
    }

    @Override
    protected void doBeginRead() {
        Endpoint ep = endpoint;
        if (inputShutdown) {
            return;
        }
        if (ep != null && isActive()) {
            ep.read();
        } else {
            // Asked while connecting (an accepted child is registered, and its handlers may read, before its endpoint
            // arrives; an accepted socket would be active already): passed on once connected.
            readAskedBeforeActive = true;
        }
    }

    /**
     * Auto-read was turned off: a read asked and not yet served is withdrawn, as a socket channel clears its pending
     * read, so nothing comes up until the next {@code read()}.
     */
    void clearReadPending() {
        if (!isRegistered()) {
            readAskedBeforeActive = false;
        } else if (eventLoop().inEventLoop()) {
            clearReadPending0();
        } else {
            eventLoop().execute(this::clearReadPending0);
        }
    }

    private void clearReadPending0() {
        if (config.isAutoRead()) {
            return; // turned on again meanwhile
        }
        readAskedBeforeActive = false;
        if (stream != null) {
            stream.clearReadDemand();
        }
    }

    /** Connected: a read the pipeline asked for while connecting goes to the endpoint now. */
    private void passReadAskedBeforeActive() {
        if (readAskedBeforeActive) {
            readAskedBeforeActive = false;
            if (!inputShutdown) {
                endpoint.read();
            }
        }
    }

    @Override
    protected Object filterOutboundMessage(Object msg) {
        if (msg instanceof ByteBuf) {
            return msg;
        }
        throw new UnsupportedMessageTypeException(msg, ByteBuf.class);
    }

    /**
     * The promise for what this channel writes on its endpoint: a failure there means the endpoint is ending, which
     * closes this channel anyway, so it must not also travel the endpoint's pipeline as an exception (the channel's
     * own void promise would fire one, which the endpoint would take for a protocol error of the frame's lane).
     */
    private static ChannelPromise noNotice(Endpoint ep) {
        return ep.unsafe().voidPromise();
    }

    /** Writes up to this size are gathered into one stream write (one message, one frame when it fits). */
    static final int GATHER_LIMIT = 64 * 1024;

    /**
     * Hands the flushed buffers to the stream while its window has room and the lanes are writable. Small buffers
     * are gathered (a composite, up to {@value #GATHER_LIMIT} bytes) into one stream write, as a socket's writev
     * sends many buffers in one call: codecs write headers and bodies as separate buffers, and one message per
     * buffer would pay a message's cost for each. A large buffer goes alone, so it stays one message the
     * protocols may send by rendezvous, zero-copy.
     */
    @Override
    protected void doWrite(ChannelOutboundBuffer in) throws Exception {
        writing = true;
        try {
            writeToStream(in);
        } finally {
            writing = false;
            if (endAfterWrite || closeAfterWrite) {
                boolean end = endAfterWrite;
                boolean close = closeAfterWrite;
                endAfterWrite = false;
                closeAfterWrite = false;
                endEndpoint(end, close);
            }
        }
    }

    /**
     * {@link #doWrite}'s loop. A buffer's promise completes as it leaves the outbound buffer, and a gathered one's
     * bytes reach the endpoint later, with the gathering: a listener may shut down or close meanwhile (see
     * {@link #writing}).
     */
    private void writeToStream(ChannelOutboundBuffer in) throws Exception {
        Endpoint ep = endpoint;
        CompositeByteBuf gathered = null;
        int gatheredBytes = 0;
        boolean wrote = false;
        for (Object m; (m = in.current()) != null; ) {
            ByteBuf buf = (ByteBuf) m;
            if (!ep.isOpen()) {
                if (gathered != null) {
                    gathered.release(); // the endpoint is gone: the bytes with it, as a reset socket's
                }
                Throwable why = ep.errorFuture().cause();
                throw why instanceof Exception e ? e : new ClosedChannelException();
            }
            if (stream.outputEnded()) {
                if (gathered != null) {
                    gathered.release();
                }
                // Closed under this channel (its worker closes, e.g. with its event loop group): nothing may follow.
                throw new ChannelOutputShutdownException("the endpoint under " + this
                        + " is closing (its worker closes): nothing more can be written");
            }
            int n = buf.readableBytes();
            boolean alone = n > GATHER_LIMIT / 2;
            if (gathered != null && (alone || gatheredBytes + n > GATHER_LIMIT)) {
                ep.write(new StreamData(gathered), noNotice(ep));
                gathered = null;
                gatheredBytes = 0;
                wrote = true;
            }
            if (!stream.accepts(gatheredBytes + n) || !ep.isWritable()) {
                break; // resumed when credit comes or the lanes drain
            }
            if (alone) {
                ep.write(new StreamData(buf.retain()), noNotice(ep));
                wrote = true;
            } else {
                if (gathered == null) {
                    gathered = alloc().compositeBuffer(64);
                }
                gathered.addComponent(true, buf.retain());
                gatheredBytes += n;
            }
            in.remove();
        }
        if (gathered != null) {
            ep.write(new StreamData(gathered), noNotice(ep));
            wrote = true;
        }
        if (wrote) {
            ep.flush();
        }
    }

    // ------------------------------------------------------------ writes after the end name it

    @Override
    public ChannelFuture write(Object msg) {
        return write(msg, newPromise());
    }

    @Override
    public ChannelFuture write(Object msg, ChannelPromise promise) {
        return isOpen() ? super.write(msg, promise) : writeAfterClose(msg, promise);
    }

    @Override
    public ChannelFuture writeAndFlush(Object msg) {
        return writeAndFlush(msg, newPromise());
    }

    @Override
    public ChannelFuture writeAndFlush(Object msg, ChannelPromise promise) {
        return isOpen() ? super.writeAndFlush(msg, promise) : writeAfterClose(msg, promise);
    }

    private ChannelFuture writeAfterClose(Object msg, ChannelPromise promise) {
        ReferenceCountUtil.release(msg);
        Endpoint ep = endpoint;
        Throwable failed = ep != null && ep.errorFuture().isDone() ? ep.errorFuture().cause() : null;
        promise.tryFailure(new NucxClosedException(this + " is closed" + (failed != null ? " (its endpoint failed: "
                + failed.getMessage() + ")" : ""), failed));
        return promise;
    }

    // ------------------------------------------------------------ DuplexChannel

    @Override
    public boolean isInputShutdown() {
        return inputShutdown || !isActive();
    }

    @Override
    public ChannelFuture shutdownInput() {
        return shutdownInput(newPromise());
    }

    /**
     * Stops reading: what the peer still sends is dropped (its writes still complete), as SHUT_RD does. The endpoint
     * then reads by itself, so its window keeps coming back and the peer's writes, end and close are not held up.
     */
    @Override
    public ChannelFuture shutdownInput(ChannelPromise promise) {
        return onLoop(promise, p -> {
            inputShutdown = true;
            endpointReadsByItself();
            p.trySuccess();
        });
    }

    @Override
    public boolean isOutputShutdown() {
        return outputShutdown || !isActive();
    }

    @Override
    public ChannelFuture shutdownOutput() {
        return shutdownOutput(newPromise());
    }

    @Override
    public ChannelFuture shutdownOutput(ChannelPromise promise) {
        return onLoop(promise, p -> ((AbstractUnsafe) unsafe()).shutdownOutput(p));
    }

    /** Runs {@code op} with {@code promise} on this channel's loop: at once if called there, else as a task. */
    private ChannelFuture onLoop(ChannelPromise promise, Consumer<ChannelPromise> op) {
        if (eventLoop().inEventLoop()) {
            op.accept(promise);
        } else {
            eventLoop().execute(() -> op.accept(promise));
        }
        return promise;
    }

    /** Ends the stream behind what it took: the peer reads every byte, then sees its input shut down. */
    @Override
    protected void doShutdownOutput() {
        if (outputShutdown) {
            return;
        }
        outputShutdown = true;
        endEndpoint(true, false);
    }

    @Override
    public boolean isShutdown() {
        return (inputShutdown && outputShutdown) || !isActive();
    }

    @Override
    public ChannelFuture shutdown() {
        return shutdown(newPromise());
    }

    @Override
    public ChannelFuture shutdown(ChannelPromise promise) {
        ChannelPromise out = newPromise();
        shutdownOutput(out);
        out.addListener(f -> shutdownInput(promise));
        return promise;
    }

    @Override
    public String toString() {
        return "NucxChannel(" + local + (parent() != null ? " <- " : " -> ") + remote + ", " + state
                + (endpoint != null ? ", " + endpoint.describeLanes() : "") + ")";
    }
}
