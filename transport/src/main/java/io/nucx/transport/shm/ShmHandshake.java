package io.nucx.transport.shm;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
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
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * Sets up a shm connection over the Unix socket of the target iface, then leaves the socket to be the doorbell.
 * Two messages: HELLO (connector → acceptor: "here are both rings: the one I read, the one you read"), REPLY
 * (acceptor → connector: "mapped both"). The connector creates both rings and deletes both files once the REPLY says
 * they are mapped, so a connection leaves no file behind however it ends; and the side that asks pays: an acceptor
 * creates nothing for a connector, so handshakes that stall hold no ring of the acceptor's (they hold mappings of the
 * connector's own files until the timeout, and an iface takes at most {@link #MAX_PENDING} at once).
 *
 * <pre>
 *  u16 length of the rest | u32 magic "NXSH" | u8 version | u8 kind | u16 0 | u64 host id | u64 pid |
 *  u64 iface id | u16 path length | path | u16 path length | path      (UTF-8; HELLO only)  all little-endian
 * </pre>
 * The first path is the ring the connector reads (the acceptor writes it), the second the one the acceptor reads.
 * Anything else (wrong magic, version, host, a ring path that is not the sender's ring file under the shm
 * directory, a link, a file of another user) closes the socket with an error that names it.
 */
final class ShmHandshake extends ByteToMessageDecoder {

    static final int MAGIC = 0x4853584E; // "NXSH"
    static final int VERSION = 2;
    static final int HELLO = 1;
    static final int REPLY = 2;
    private static final int MAX_MESSAGE = 4096;

    /** What a finished handshake hands over. */
    record Result(ShmAddress peer, SpscRing in, SpscRing out) {
    }

    private final boolean connector;
    private final Path dir;
    private final ShmAddress local;
    private final int ringSize;
    private final long timeoutNanos;
    private final Consumer<Result> onDone;
    private final Consumer<Throwable> onFailure;
    private SpscRing in;
    private SpscRing out;
    private ShmAddress peer;
    private boolean done;
    private ScheduledFuture<?> timeout;

    ShmHandshake(boolean connector, Path dir, ShmAddress local, int ringSize, long timeoutNanos,
                 Consumer<Result> onDone, Consumer<Throwable> onFailure) {
        this.connector = connector;
        this.dir = dir;
        this.local = local;
        this.ringSize = ringSize;
        this.timeoutNanos = timeoutNanos;
        this.onDone = onDone;
        this.onFailure = onFailure;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        timeout = ctx.executor().schedule(() -> fail(ctx, new IOException("shm handshake with "
                + ctx.channel().remoteAddress() + " did not finish within " + Duration.ofNanos(timeoutNanos)
                + " (NUCX_SHM_HANDSHAKE_TIMEOUT)")), timeoutNanos, TimeUnit.NANOSECONDS);
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
            out = SpscRing.create(ShmFiles.newRing(dir, local.ifaceId()), ringSize);
            send(ctx, HELLO, in.file(), out.file());
        } catch (IOException | RuntimeException e) {
            fail(ctx, e);
        }
    }

    private void send(ChannelHandlerContext ctx, int kind, Path first, Path second) {
        byte[] a = first == null ? new byte[0] : first.toString().getBytes(StandardCharsets.UTF_8);
        byte[] b2 = second == null ? new byte[0] : second.toString().getBytes(StandardCharsets.UTF_8);
        int rest = 4 + 1 + 1 + 2 + 8 + 8 + 8 + 2 + a.length + 2 + b2.length;
        ByteBuf b = ctx.alloc().buffer(2 + rest);
        b.writeShortLE(rest).writeIntLE(MAGIC).writeByte(VERSION).writeByte(kind).writeShortLE(0)
                .writeLongLE(HostId.get()).writeLongLE(local.pid()).writeLongLE(local.ifaceId())
                .writeShortLE(a.length).writeBytes(a).writeShortLE(b2.length).writeBytes(b2);
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
        if (rest < 36 || rest > MAX_MESSAGE) {
            buf.skipBytes(buf.readableBytes());
            fail(ctx, new CorruptedFrameException("shm handshake message of " + rest + " bytes from "
                    + ctx.channel().remoteAddress() + " (expected 36.." + MAX_MESSAGE + ")"));
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
        Path first = path(m);
        Path second = path(m);
        if (m.isReadable()) {
            throw new CorruptedFrameException("shm handshake with " + m.readableBytes() + " bytes after its paths");
        }
        int expected = connector ? REPLY : HELLO;
        if (kind != expected || peer != null) {
            throw new CorruptedFrameException("shm handshake message kind " + kind + " where " + expected
                    + " was expected");
        }
        if (kind == HELLO) {
            for (Path ring : new Path[] {first, second}) {
                if (ring == null || !ShmFiles.isRingOf(dir, ring, pid)) {
                    throw new CorruptedFrameException("shm handshake names '" + ring + "', which is not a ring file "
                            + "of pid " + pid + " in " + dir);
                }
            }
            peer = new ShmAddress(pid, ifaceId);
            out = SpscRing.open(first); // the connector reads it: we write it
            in = SpscRing.open(second);
            send(ctx, REPLY, null, null);
            finish(ctx);
        } else {
            if (first != null || second != null) {
                throw new CorruptedFrameException("shm handshake REPLY naming files");
            }
            peer = new ShmAddress(pid, ifaceId);
            Files.deleteIfExists(in.file()); // the acceptor mapped both before replying
            Files.deleteIfExists(out.file());
            finish(ctx);
        }
    }

    private static Path path(ByteBuf m) {
        if (m.readableBytes() < 2) {
            throw new CorruptedFrameException("shm handshake cut short before a path length");
        }
        int length = m.readUnsignedShortLE();
        if (length > m.readableBytes()) {
            throw new CorruptedFrameException("shm handshake path length " + length + " but " + m.readableBytes()
                    + " bytes follow");
        }
        return length == 0 ? null : Path.of(m.readCharSequence(length, StandardCharsets.UTF_8).toString());
    }

    private void finish(ChannelHandlerContext ctx) {
        if (done) {
            return; // failed already: the REPLY could not be written (the peer went), and its rings were let go
        }
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

    /** Ends the handshake under way with {@code cause} (its iface closes): rings let go, socket closed. Loop only. */
    void abort(Channel doorbell, Throwable cause) {
        ChannelHandlerContext ctx = doorbell.pipeline().context(this);
        if (ctx != null) {
            fail(ctx, cause);
        }
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
                if (connector) { // ours: nobody else deletes them
                    try {
                        Files.deleteIfExists(r.file());
                    } catch (IOException ignored) {
                        // reaped at the next start
                    }
                }
            }
        }
        in = null;
        out = null;
        ctx.close();
        onFailure.accept(cause);
    }
}
