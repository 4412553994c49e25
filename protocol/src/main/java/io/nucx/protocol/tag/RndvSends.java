package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.ProtocolException;
import io.nucx.transport.AmFrame;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A worker's rendezvous sends waiting for the receiver: sender request id → the message, its promise and where to
 * write its data. Request ids are local and indirect (a map, not a reference), so an id from a peer that went away
 * finds nothing. Confined to the worker's loop.
 */
public final class RndvSends {

    private record Pending(long tag, ByteBuf content, ChannelPromise promise, ChannelHandlerContext ctx,
                           int fragment) {
        Channel endpoint() {
            return ctx.channel();
        }
    }

    private final Map<Long, Pending> pending = new HashMap<>();
    private long nextId = 1;

    /** Registers a send; returns its request id. Takes ownership of {@code content}. */
    long add(long tag, ByteBuf content, ChannelPromise promise, ChannelHandlerContext ctx, int fragment) {
        long id = nextId++;
        pending.put(id, new Pending(tag, content, promise, ctx, fragment));
        return id;
    }

    /** Sends waiting, for tests and diagnostics. */
    public int size() {
        return pending.size();
    }

    private Pending take(Channel source, long senderReqId, String what) {
        Pending p = pending.get(senderReqId);
        if (p == null || p.endpoint() != source) {
            throw new ProtocolException(what + " for unknown rendezvous send " + senderReqId + " from " + source);
        }
        pending.remove(senderReqId);
        return p;
    }

    /** The receiver is ready: send the data as RNDV_DATA fragments; the last carries the user's promise. */
    public void onRtr(Channel source, long senderReqId, long receiverReqId, long size) {
        Pending p = take(source, senderReqId, "RTR");
        ByteBuf content = p.content();
        try {
            if (size != content.readableBytes()) {
                p.promise().tryFailure(new ProtocolException("receiver asked for " + size + " bytes of a "
                        + content.readableBytes() + "-byte rendezvous send"));
                return;
            }
            ChannelHandlerContext ctx = p.ctx();
            int start = content.readerIndex();
            int length = content.readableBytes();
            for (int offset = 0; offset < length; offset += p.fragment()) {
                int n = Math.min(p.fragment(), length - offset);
                ByteBuf header = ctx.alloc().buffer(RndvHeaders.DATA_LENGTH).writeLongLE(receiverReqId)
                        .writeLongLE(offset);
                boolean last = offset + n == length;
                ctx.write(AmFrame.of(AmIds.RNDV_DATA, 0, header, content.retainedSlice(start + offset, n)),
                        last ? p.promise() : ctx.voidPromise());
            }
            ctx.flush();
        } finally {
            content.release();
        }
    }

    /** The receiver ended the send without data: done (a 0-byte message) or refused (truncated). */
    public void onAts(Channel source, long senderReqId, int status) {
        Pending p = take(source, senderReqId, "ATS");
        try {
            if (status == RndvHeaders.STATUS_OK) {
                p.promise().trySuccess();
            } else if (status == RndvHeaders.STATUS_TRUNCATED) {
                p.promise().tryFailure(new MessageTruncatedException(p.tag(), p.content().readableBytes(), -1));
            } else {
                p.promise().tryFailure(new ProtocolException("rendezvous send " + senderReqId + " ended with status "
                        + status));
            }
        } finally {
            p.content().release();
        }
    }

    /** The promises of {@code endpoint}'s sends still waiting for the receiver (a graceful close waits for them). */
    public List<io.netty.util.concurrent.Future<Void>> promisesOf(Channel endpoint) {
        List<io.netty.util.concurrent.Future<Void>> out = new ArrayList<>();
        for (Pending p : pending.values()) {
            if (p.endpoint() == endpoint) {
                out.add(p.promise());
            }
        }
        return out;
    }

    /** The endpoint went away: its waiting sends fail. */
    public void onEndpointClosed(Channel endpoint, Throwable cause) {
        List<Long> dead = new ArrayList<>();
        pending.forEach((id, p) -> {
            if (p.endpoint() == endpoint) {
                dead.add(id);
            }
        });
        for (Long id : dead) {
            fail(pending.remove(id), cause);
        }
    }

    /** Fails every waiting send. */
    public void close(Throwable cause) {
        List<Pending> all = new ArrayList<>(pending.values());
        pending.clear();
        for (Pending p : all) {
            fail(p, cause);
        }
    }

    private static void fail(Pending p, Throwable cause) {
        p.content().release();
        p.promise().tryFailure(cause);
    }
}
