package io.nucx.transport.shm;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.handler.codec.CorruptedFrameException;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.ScheduledFuture;
import io.nucx.transport.HostId;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * Sets up a shm connection over the Unix socket of the target iface, then leaves the socket to be the doorbell.
 * Three messages: HELLO (connector → acceptor: "my inbound ring is this file"), REPLY (acceptor → connector:
 * "mapped it; mine is this one"), READY (connector → acceptor: "mapped yours"). Each side creates the ring it reads
 * and deletes its file once the peer has mapped it, so a connection leaves no file behind however it ends.
 *
 * <pre>
 *  u16 length of the rest | u32 magic "NXSH" | u8 version | u8 kind | u16 0 | u64 host id | u64 pid |
 *  u64 iface id | u16 path length | path (UTF-8; none in READY)          all little-endian
 * </pre>
 * Anything else (wrong magic, version, host, a ring path that is not the sender's ring file under the shm
 * directory) closes the socket with an error that names it.
 */
final class ShmHandshake extends ByteToMessageDecoder {

    static final int MAGIC = 0x4853584E; // "NXSH"
    static final int VERSION = 1;
    static final int HELLO = 1;
    static final int REPLY = 2;
    static final int READY = 3;
    private static final int MAX_MESSAGE = 4096;
    static final long TIMEOUT_SECONDS = 10;

    /** What a finished handshake hands over. */
    record Result(ShmAddress peer, SpscRing in, SpscRing out) {
    }

    private final boolean connector;
    private final Path dir;
    private final ShmAddress local;
    private final int ringSize;
    private final Consumer<Result> onDone;
    private final Consumer<Throwable> onFailure;
    private SpscRing in;
    private SpscRing out;
    private ShmAddress peer;
    private boolean done;
    private ScheduledFuture<?> timeout;

    ShmHandshake(boolean connector, Path dir, ShmAddress local, int ringSize, Consumer<Result> onDone,
                 Consumer<Throwable> onFailure) {
        this.connector = connector;
        this.dir = dir;
        this.local = local;
        this.ringSize = ringSize;
        this.onDone = onDone;
        this.onFailure = onFailure;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        timeout = ctx.executor().schedule(() -> fail(ctx, new IOException("shm handshake with "
                + ctx.channel().remoteAddress() + " did not finish within " + TIMEOUT_SECONDS + " s")),
                TIMEOUT_SECONDS, TimeUnit.SECONDS);
        if (ctx.channel().isActive()) {
            start(ctx);
        }
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) throws Exception {
        start(ctx);
        super.channelActive(ctx);
    }

    private boolean started;

    private void start(ChannelHandlerContext ctx) {
        if (started || !connector) {
            return;
        }
        started = true;
        try {
            in = SpscRing.create(ShmFiles.newRing(dir, local.ifaceId()), ringSize);
            send(ctx, HELLO, in.file());
        } catch (IOException | RuntimeException e) {
            fail(ctx, e);
        }
    }

    private void send(ChannelHandlerContext ctx, int kind, Path ring) {
        byte[] path = ring == null ? new byte[0] : ring.toString().getBytes(StandardCharsets.UTF_8);
        int rest = 4 + 1 + 1 + 2 + 8 + 8 + 8 + 2 + path.length;
        ByteBuf b = ctx.alloc().buffer(2 + rest);
        b.writeShortLE(rest).writeIntLE(MAGIC).writeByte(VERSION).writeByte(kind).writeShortLE(0)
                .writeLongLE(HostId.get()).writeLongLE(local.pid()).writeLongLE(local.ifaceId())
                .writeShortLE(path.length).writeBytes(path);
        ctx.writeAndFlush(b).addListener(f -> {
            if (!f.isSuccess()) {
                fail(ctx, f.cause());
            }
        });
    }

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf buf, List<Object> outList) {
        if (done || buf.readableBytes() < 2) {
            return;
        }
        int rest = buf.getUnsignedShortLE(buf.readerIndex());
        if (rest < 34 || rest > MAX_MESSAGE) {
            buf.skipBytes(buf.readableBytes());
            fail(ctx, new CorruptedFrameException("shm handshake message of " + rest + " bytes from "
                    + ctx.channel().remoteAddress() + " (expected 34.." + MAX_MESSAGE + ")"));
            return;
        }
        if (buf.readableBytes() < 2 + rest) {
            return;
        }
        buf.skipBytes(2);
        ByteBuf m = buf.readSlice(rest);
        try {
            handle(ctx, m);
        } catch (IOException | RuntimeException e) {
            fail(ctx, e);
        }
    }

    private void handle(ChannelHandlerContext ctx, ByteBuf m) throws IOException {
        int magic = m.readIntLE();
        int version = m.readUnsignedByte();
        int kind = m.readUnsignedByte();
        m.skipBytes(2);
        long host = m.readLongLE();
        long pid = m.readLongLE();
        long ifaceId = m.readLongLE();
        int pathLength = m.readUnsignedShortLE();
        if (magic != MAGIC) {
            throw new CorruptedFrameException("not a shm handshake (magic 0x" + Integer.toHexString(magic) + ")");
        }
        if (version != VERSION) {
            throw new CorruptedFrameException("shm handshake version " + version + ", this build speaks " + VERSION);
        }
        if (host != HostId.get()) {
            throw new CorruptedFrameException("shm handshake from another host (host id " + Long.toHexString(host)
                    + ", ours " + Long.toHexString(HostId.get()) + ")");
        }
        if (pathLength != m.readableBytes()) {
            throw new CorruptedFrameException("shm handshake path length " + pathLength + " but "
                    + m.readableBytes() + " bytes follow");
        }
        Path ring = pathLength == 0 ? null : Path.of(m.readCharSequence(pathLength, StandardCharsets.UTF_8)
                .toString());
        int expected = connector ? (out == null ? REPLY : -1) : (out == null ? HELLO : READY);
        if (kind != expected) {
            throw new CorruptedFrameException("shm handshake message kind " + kind + " where " + expected
                    + " was expected");
        }
        if (kind != READY && (ring == null || !ShmFiles.isRingOf(dir, ring, pid))) {
            throw new CorruptedFrameException("shm handshake names '" + ring + "', which is not a ring file of pid "
                    + pid + " in " + dir);
        }
        switch (kind) {
            case HELLO -> {
                peer = new ShmAddress(pid, ifaceId);
                out = SpscRing.open(ring);
                in = SpscRing.create(ShmFiles.newRing(dir, local.ifaceId()), ringSize);
                send(ctx, REPLY, in.file());
            }
            case REPLY -> {
                peer = new ShmAddress(pid, ifaceId);
                out = SpscRing.open(ring);
                Files.deleteIfExists(in.file()); // the acceptor mapped it before replying
                send(ctx, READY, null);
                finish(ctx);
            }
            case READY -> {
                Files.deleteIfExists(in.file());
                finish(ctx);
            }
            default -> throw new IllegalStateException();
        }
    }

    private void finish(ChannelHandlerContext ctx) {
        done = true;
        timeout.cancel(false);
        Result r = new Result(peer, in, out);
        in = null;
        out = null;
        // Whatever follows in the stream is doorbell bytes: removing the decoder passes them on.
        ctx.pipeline().replace(this, "nucx.shm.doorbell", new ChannelInboundHandlerAdapter() {
            @Override
            public void channelRead(ChannelHandlerContext c, Object msg) {
                ReferenceCountUtil.release(msg);
            }

            @Override
            public void exceptionCaught(ChannelHandlerContext c, Throwable cause) {
                // A reset when the peer closed with doorbell bytes unread: the socket is gone either way, and its
                // closing is how the lane learns the peer went.
                c.close();
            }
        });
        onDone.accept(r);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
        if (!done) {
            fail(ctx, new IOException("shm peer " + ctx.channel().remoteAddress() + " closed the socket during "
                    + "the handshake"));
        }
        super.channelInactive(ctx);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        fail(ctx, cause);
    }

    private void fail(ChannelHandlerContext ctx, Throwable cause) {
        if (done) {
            return;
        }
        done = true;
        if (timeout != null) {
            timeout.cancel(false);
        }
        for (SpscRing r : new SpscRing[] {in, out}) {
            if (r != null) {
                r.close();
            }
        }
        if (in != null) {
            try {
                Files.deleteIfExists(in.file());
            } catch (IOException ignored) {
                // reaped at the next start
            }
        }
        in = null;
        out = null;
        ctx.close();
        onFailure.accept(cause);
    }
}
