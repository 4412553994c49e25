package io.nucx;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;

import java.nio.charset.StandardCharsets;

/**
 * The exchange on the TCP connection a {@link NucxChannel} opens to a {@link NucxServerChannel}'s host:port (UCX's
 * sockaddr client-server flow, where a connection manager carries the worker addresses): the client says HELLO; once
 * the accepted channel is registered on its loop, the server answers ACCEPT with the address of that loop's worker
 * and a token; the client connects an endpoint to that worker whose wireup REQUEST carries the token, and the server
 * hands the endpoint it creates to the channel waiting for that token. Then wireup selects lanes as for any endpoint
 * (shm and cma on one host, tcp across), and the connection has done its job.
 *
 * <pre>
 *  +-------------+---------------+------------+---------+-------------------------------------------+
 *  | length:u32  | magic:u32     | version:u8 | type:u8 | body                                      |
 *  | (the rest)  | "NUCX"        |     1      |         | HELLO: none                               |
 *  +-------------+---------------+------------+---------+ ACCEPT: token:u16, packed worker address   |
 *                                                        | REJECT: UTF-8 reason                       |
 *                                                        +-------------------------------------------+
 * </pre>
 * Big-endian, as the length field Netty's frame decoder reads.
 */
final class ListenerHandshake {

    static final int MAGIC = 0x4e554358; // "NUCX"
    static final int VERSION = 1;
    static final int HELLO = 1;
    static final int ACCEPT = 2;
    static final int REJECT = 3;
    static final int MAX_FRAME = 64 * 1024;
    /** How long a listener waits for a client's HELLO before it drops the connection. */
    static final long HELLO_TIMEOUT_MILLIS = 10_000;

    private ListenerHandshake() {
    }

    /** The framing both sides put first on the connection. */
    static LengthFieldBasedFrameDecoder decoder() {
        return new LengthFieldBasedFrameDecoder(MAX_FRAME, 0, 4, 0, 4);
    }

    static ByteBuf hello(ByteBufAllocator alloc) {
        return frame(alloc, HELLO, 0);
    }

    static ByteBuf accept(ByteBufAllocator alloc, int token, WorkerAddress address) {
        byte[] a = address.encode();
        ByteBuf b = frame(alloc, ACCEPT, 2 + a.length);
        return b.writeShort(token).writeBytes(a);
    }

    static ByteBuf reject(ByteBufAllocator alloc, String reason) {
        byte[] r = reason.getBytes(StandardCharsets.UTF_8);
        int n = Math.min(r.length, 1024);
        return frame(alloc, REJECT, n).writeBytes(r, 0, n);
    }

    private static ByteBuf frame(ByteBufAllocator alloc, int type, int bodyLength) {
        return alloc.buffer(10 + bodyLength).writeInt(6 + bodyLength).writeInt(MAGIC).writeByte(VERSION)
                .writeByte(type);
    }

    /**
     * The type of a frame (its length field already stripped), its reader index moved to the body.
     *
     * @throws IllegalArgumentException naming what was wrong: a peer that does not speak this exchange
     */
    static int read(ByteBuf frame) {
        if (frame.readableBytes() < 6) {
            throw new IllegalArgumentException("a " + frame.readableBytes() + "-byte message, too short for a nucx "
                    + "listener exchange");
        }
        int magic = frame.readInt();
        int version = frame.readUnsignedByte();
        if (magic != MAGIC) {
            throw new IllegalArgumentException("not a nucx listener exchange (magic 0x" + Integer.toHexString(magic)
                    + ")");
        }
        if (version != VERSION) {
            throw new IllegalArgumentException("nucx listener exchange version " + version + ", this side speaks "
                    + VERSION);
        }
        return frame.readUnsignedByte();
    }
}
