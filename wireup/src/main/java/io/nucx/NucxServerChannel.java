package io.nucx;

import io.netty.buffer.ByteBuf;
import io.netty.channel.AbstractServerChannel;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.ServerChannel;
import io.netty.channel.socket.ServerSocketChannel;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.ScheduledFuture;
import io.nucx.transport.IoEngine;

import java.net.BindException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.ArrayDeque;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * A listener on host:port whose accepted channels are {@link NucxChannel}s (UCX's {@code ucp_listener}): for
 * {@code ServerBootstrap} on a {@link NucxEventLoopGroup}, with {@code childHandler}, {@code childOption} and
 * {@code childAttr} as for {@code NioServerSocketChannel}. It listens with a TCP socket of its loop's engine; a client
 * that connects and says HELLO ({@link ListenerHandshake}) becomes a child, fired up this pipeline for the
 * {@code ServerBootstrap} to register on its child group; once registered, the child gives the client the address of
 * its own loop's worker and waits for the client's endpoint. A connection that does not say HELLO within 10 s, or
 * says something else, is closed and never becomes a child. With auto-read off, children wait for {@code read()}.
 */
public final class NucxServerChannel extends AbstractServerChannel implements ServerSocketChannel {

    private enum State { OPEN, BOUND, CLOSED }

    private final NucxServerChannelConfig config = new NucxServerChannelConfig(this);
    private volatile State state = State.OPEN;
    private volatile InetSocketAddress local;
    private Channel listener;
    /** Connections that have not said HELLO yet. */
    private final Set<Channel> exchanges = new HashSet<>();
    /** Children waiting for a read() (auto-read off). */
    private final ArrayDeque<NucxChannel> accepted = new ArrayDeque<>();
    private boolean readPending;

    public NucxServerChannel() {
    }

    @Override
    public NucxServerChannelConfig config() {
        return config;
    }

    @Override
    public boolean isOpen() {
        return state != State.CLOSED;
    }

    @Override
    public boolean isActive() {
        return state == State.BOUND;
    }

    @Override
    public InetSocketAddress localAddress() {
        return (InetSocketAddress) super.localAddress();
    }

    @Override
    public InetSocketAddress remoteAddress() {
        return null;
    }

    @Override
    protected SocketAddress localAddress0() {
        return local;
    }

    @Override
    protected boolean isCompatible(EventLoop loop) {
        return IoEngine.of(loop) != null;
    }

    /**
     * Binds the listening TCP socket now, on this loop: registration and bind of a channel of the loop's own engine
     * run inline here, so {@code localAddress()} is the bound address (port 0 resolved) when the bind future completes.
     */
    @Override
    protected void doBind(SocketAddress localAddress) throws Exception {
        IoEngine engine = IoEngine.of(eventLoop());
        ServerChannel ch = engine.serverChannel().getDeclaredConstructor().newInstance();
        ch.config().setOption(ChannelOption.SO_BACKLOG, config.getBacklog());
        ch.config().setOption(ChannelOption.SO_REUSEADDR, config.isReuseAddress());
        ch.pipeline().addLast(new ChannelInboundHandlerAdapter() {
            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                connected((Channel) msg);
            }
        });
        ChannelFuture registered = eventLoop().register(ch);
        if (!registered.isDone()) {
            ch.close();
            throw new IllegalStateException("the listening socket did not register at once on " + eventLoop());
        }
        if (!registered.isSuccess()) {
            throw new BindException("cannot register the listening socket: " + registered.cause());
        }
        ChannelFuture bound = ch.bind(localAddress);
        if (!bound.isDone() || !bound.isSuccess()) {
            ch.close();
            Throwable why = bound.cause();
            if (why instanceof Exception e) {
                throw e;
            }
            throw new BindException("cannot bind " + localAddress + (why != null ? ": " + why : ""));
        }
        listener = ch;
        local = (InetSocketAddress) ch.localAddress();
        state = State.BOUND;
    }

    /** A client connected: it must say HELLO before it becomes a child. */
    private void connected(Channel ch) {
        if (!isActive()) {
            ch.unsafe().closeForcibly();
            return;
        }
        ch.pipeline().addLast(new ChannelInitializer<>() {
            @Override
            protected void initChannel(Channel c) {
                c.pipeline().addLast(ListenerHandshake.decoder(), new Hello());
            }
        });
        eventLoop().register(ch);
        exchanges.add(ch);
        ch.closeFuture().addListener(f -> exchanges.remove(ch));
    }

    /** Waits for the client's HELLO (bounded); then hands the connection to a new child. */
    private final class Hello extends ChannelInboundHandlerAdapter {
        private ScheduledFuture<?> timeout;

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            timeout = ctx.executor().schedule(() -> {
                ctx.close();
            }, ListenerHandshake.HELLO_TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
            ctx.fireChannelActive();
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ByteBuf frame = (ByteBuf) msg;
            try {
                if (ListenerHandshake.read(frame) != ListenerHandshake.HELLO) {
                    throw new IllegalArgumentException("a client must say HELLO first");
                }
            } catch (RuntimeException e) {
                ctx.writeAndFlush(ListenerHandshake.reject(ctx.alloc(), e.getMessage()))
                        .addListener(ChannelFutureListener.CLOSE);
                return;
            } finally {
                ReferenceCountUtil.release(frame);
            }
            timeout.cancel(false);
            ctx.pipeline().remove(this);
            exchanges.remove(ctx.channel());
            offer(new NucxChannel(NucxServerChannel.this, ctx.channel()));
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }
    }

    private void offer(NucxChannel child) {
        accepted.add(child);
        if (readPending || config.isAutoRead()) {
            deliver();
        }
    }

    private void deliver() {
        if (accepted.isEmpty()) {
            return;
        }
        readPending = false;
        for (NucxChannel c; (c = accepted.poll()) != null; ) {
            pipeline().fireChannelRead(c);
        }
        pipeline().fireChannelReadComplete();
    }

    @Override
    protected void doBeginRead() {
        readPending = true;
        deliver();
    }

    @Override
    protected void doClose() {
        state = State.CLOSED;
        if (listener != null) {
            listener.close();
        }
        for (Channel c : Set.copyOf(exchanges)) {
            c.close();
        }
        for (NucxChannel c; (c = accepted.poll()) != null; ) {
            c.unsafe().closeForcibly();
        }
    }

    @Override
    public String toString() {
        return "NucxServerChannel(" + local + ", " + state + ")";
    }
}
