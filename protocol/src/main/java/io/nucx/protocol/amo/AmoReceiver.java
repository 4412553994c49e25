package io.nucx.protocol.amo;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.ProtocolException;
import io.nucx.transport.AmFrame;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.util.function.BiConsumer;

/**
 * The target side of atomics: applies an ATOMIC_REQ to registered memory with the CPU's atomic instructions (a
 * {@link VarHandle} on the native word, so local code using atomics on the same words stays coherent with peers) and
 * answers ATOMIC_REP with the previous value; also completes our own requests from their ATOMIC_REP. A request the
 * memory does not allow (no such region, outside it, misaligned) is answered with a status, and only that request
 * fails; a malformed frame is a {@link ProtocolException} (the lane closes). Loop only.
 */
public final class AmoReceiver {

    private static final VarHandle WORD = ValueLayout.JAVA_LONG.varHandle();

    private final MemoryRegistry memory;
    private final AtomicRequests requests;
    private final BiConsumer<Channel, AmFrame> reply;

    /** @param reply sends a frame back on the endpoint the request came from */
    public AmoReceiver(MemoryRegistry memory, AtomicRequests requests, BiConsumer<Channel, AmFrame> reply) {
        this.memory = memory;
        this.requests = requests;
        this.reply = reply;
    }

    /** Handles an ATOMIC_REQ or ATOMIC_REP from {@code source}; releases the frame. */
    public void onFrame(Channel source, AmFrame frame) {
        try {
            ByteBuf h = frame.header();
            int at = h.readerIndex();
            switch (frame.amId()) {
                case AmIds.ATOMIC_REQ -> {
                    expect(frame, AmoHeaders.REQ_LENGTH);
                    long id = h.getLongLE(at);
                    long address = h.getLongLE(at + 8);
                    long value = h.getLongLE(at + 16);
                    long compare = h.getLongLE(at + 24);
                    int region = h.getIntLE(at + 32);
                    AtomicOp op = AtomicOp.fromWire(h.getUnsignedByte(at + 36));
                    long old = 0;
                    int status = check(op, region, address);
                    if (status == AmoHeaders.STATUS_OK) {
                        MemorySegment seg = memory.region(region);
                        try {
                            old = apply(op, seg, address - seg.address(), value, compare);
                        } catch (IllegalStateException | WrongThreadException inaccessible) {
                            // its arena was closed without unregistering, or confines it to another thread
                            status = AmoHeaders.STATUS_INACCESSIBLE;
                        }
                    }
                    reply.accept(source, AmFrame.of(AmIds.ATOMIC_REP, source.alloc().buffer(AmoHeaders.REP_LENGTH)
                            .writeLongLE(id).writeByte(status).writeLongLE(old)));
                }
                case AmIds.ATOMIC_REP -> {
                    expect(frame, AmoHeaders.REP_LENGTH);
                    requests.onReply(source, h.getLongLE(at), h.getUnsignedByte(at + 8), h.getLongLE(at + 9));
                }
                default -> throw new ProtocolException("not an atomic frame: " + AmIds.name(frame.amId()));
            }
        } finally {
            frame.release();
        }
    }

    private int check(AtomicOp op, int region, long address) {
        if (op == null) {
            return AmoHeaders.STATUS_UNKNOWN_OP;
        }
        MemorySegment seg = memory.region(region);
        if (seg == null) {
            return AmoHeaders.STATUS_NO_REGION;
        }
        if (address % 8 != 0) {
            return AmoHeaders.STATUS_MISALIGNED;
        }
        long offset = address - seg.address();
        return offset < 0 || offset > seg.byteSize() - 8 ? AmoHeaders.STATUS_OUT_OF_BOUNDS : AmoHeaders.STATUS_OK;
    }

    static long apply(AtomicOp op, MemorySegment seg, long offset, long value, long compare) {
        return switch (op) {
            case ADD -> (long) WORD.getAndAdd(seg, offset, value);
            case SWAP -> (long) WORD.getAndSet(seg, offset, value);
            case CSWAP -> (long) WORD.compareAndExchange(seg, offset, compare, value);
            case AND -> (long) WORD.getAndBitwiseAnd(seg, offset, value);
            case OR -> (long) WORD.getAndBitwiseOr(seg, offset, value);
            case XOR -> (long) WORD.getAndBitwiseXor(seg, offset, value);
        };
    }

    private static void expect(AmFrame frame, int length) {
        int n = frame.header().readableBytes();
        if (n != length || frame.payload().readableBytes() != 0) {
            throw new ProtocolException(AmIds.name(frame.amId()) + " header is " + n + " bytes with "
                    + frame.payload().readableBytes() + " payload bytes, expected " + length + " and none");
        }
    }
}
