package io.nucx.examples.frameworks;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.socket.ServerSocketChannel;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;

import java.io.IOException;
import java.net.SocketAddress;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * An ordinary HTTP/1.1 server and client on Netty's own codecs ({@code HttpServerCodec}, {@code HttpClientCodec},
 * {@code HttpObjectAggregator}). The server answers each POST with the SHA-256 and length of the body it received
 * (headers {@code x-request-sha256}, {@code x-request-length}) and a body of {@code x-response-size} bytes derived
 * from {@code x-response-seed} ({@code x-hash: no} skips the hash: the throughput benchmark measures the transport,
 * not SHA-256); the client pipelines requests and checks each answer. Nothing here knows nucx: the
 * group and channel classes come from the caller ({@link Stack}).
 */
public final class HttpApp {

    /** Bodies up to 64 MiB, plus headers. */
    public static final int MAX_BODY = 64 << 20;

    private HttpApp() {
    }

    public static Channel server(EventLoopGroup boss, EventLoopGroup workers,
                                 Class<? extends ServerSocketChannel> type, SocketAddress at)
            throws InterruptedException {
        return new ServerBootstrap().group(boss, workers).channel(type)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(new HttpServerCodec(), new HttpObjectAggregator(MAX_BODY),
                                new Answer());
                    }
                }).bind(at).sync().channel();
    }

    private static final class Answer extends SimpleChannelInboundHandler<FullHttpRequest> {
        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest req) {
            int size = Integer.parseInt(req.headers().get("x-response-size", "0"));
            long seed = Long.parseLong(req.headers().get("x-response-seed", "0"));
            FullHttpResponse res = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK,
                    Unpooled.wrappedBuffer(Bodies.of(seed, size)));
            boolean hash = !"no".equals(req.headers().get("x-hash"));
            res.headers().set(HttpHeaderNames.CONTENT_LENGTH, size)
                    .set("x-request-sha256", hash ? Bodies.sha256(req.content()) : "-")
                    .set("x-request-length", req.content().readableBytes());
            HttpUtil.setKeepAlive(res, HttpUtil.isKeepAlive(req));
            ctx.writeAndFlush(res);
        }
    }

    /** What came back for one request: its status, what the server says it got, and the body's hash and length. */
    public record Answered(int status, String requestSha256, long requestLength, String bodySha256,
                           int bodyLength) {
    }

    /** A keep-alive client connection that pipelines requests; answers come back in order. */
    public static final class Client implements AutoCloseable {
        private final Channel channel;
        private final BlockingQueue<Object> answers;

        private Client(Channel channel, BlockingQueue<Object> answers) {
            this.channel = channel;
            this.answers = answers;
        }

        public static Client connect(EventLoopGroup group, Class<? extends SocketChannel> type, SocketAddress to)
                throws InterruptedException {
            BlockingQueue<Object> q = new LinkedBlockingQueue<>();
            Channel ch = new Bootstrap().group(group).channel(type).handler(new ChannelInitializer<SocketChannel>() {
                @Override
                protected void initChannel(SocketChannel c) {
                    c.pipeline().addLast(new HttpClientCodec(4096, 8192, 1 << 20), new HttpObjectAggregator(MAX_BODY),
                            new SimpleChannelInboundHandler<FullHttpResponse>() {
                                @Override
                                protected void channelRead0(ChannelHandlerContext ctx, FullHttpResponse r) {
                                    q.add(new Answered(r.status().code(), r.headers().get("x-request-sha256"),
                                            Long.parseLong(r.headers().get("x-request-length", "-1")),
                                            Bodies.sha256(r.content()), r.content().readableBytes()));
                                }

                                @Override
                                public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
                                    q.add(cause);
                                    ctx.close();
                                }
                            });
                }
            }).connect(to).sync().channel();
            return new Client(ch, q);
        }

        /** Writes a POST of {@code body} asking for a {@code responseSize}-byte answer; flush to send. */
        public void write(byte[] body, int responseSize, long responseSeed) {
            write(body, responseSize, responseSeed, true);
        }

        /** As {@link #write(byte[], int, long)}; {@code hash} false: the server does not hash the body. */
        public void write(byte[] body, int responseSize, long responseSeed, boolean hash) {
            FullHttpRequest req = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.POST, "/hash",
                    Unpooled.wrappedBuffer(body));
            req.headers().set(HttpHeaderNames.HOST, "nucx").set(HttpHeaderNames.CONTENT_LENGTH, body.length)
                    .set("x-response-size", responseSize).set("x-response-seed", responseSeed);
            if (!hash) {
                req.headers().set("x-hash", "no");
            }
            channel.write(req);
        }

        public void flush() {
            channel.flush();
        }

        /** The next answer, in request order. */
        public Answered next(long timeout, TimeUnit unit) throws Exception {
            Object o = answers.poll(timeout, unit);
            if (o == null) {
                throw new TimeoutException("no HTTP answer within " + timeout + " " + unit);
            }
            if (o instanceof Throwable t) {
                throw new IOException("the HTTP client failed: " + t, t);
            }
            return (Answered) o;
        }

        public Channel channel() {
            return channel;
        }

        @Override
        public void close() throws InterruptedException {
            channel.close().sync();
        }
    }
}
