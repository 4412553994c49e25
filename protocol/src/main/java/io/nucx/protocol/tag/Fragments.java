package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.nucx.protocol.ProtocolException;
import io.nucx.transport.Buffers;

import java.util.ArrayList;
import java.util.Map;
import java.util.TreeMap;

/**
 * The bytes of one message arriving in fragments, in any order. Each fragment is either copied into a buffer of its
 * own, the message being composed of them at the end, with memory committed only as data arrive (a peer's announcement
 * of a size commits nothing: an EAGER_FIRST or RTS announcing a gigabyte, then one byte, holds one byte), or written
 * straight into one buffer of the whole message ({@link #inPlace}): a receive's, or one its owner took and charged.
 * A fragment outside the message or overlapping one that came before is a {@link ProtocolException}. Loop only.
 *
 * <p>Fragments that arrive in order (each where the last ended, the way one lane delivers them) are tracked in two
 * ints and a reused list, allocating nothing per fragment; the first that does not moves the bookkeeping to sorted
 * maps of merged ranges ({@code start -> end}) and copies, where any order costs a logarithm per fragment. An object
 * can be {@linkplain #reset reset} for the next message, as {@link EagerReceiver} does.
 */
final class Fragments {

    /** Where copies come from; null: fragments are placed in {@link #target}, or only counted. */
    private ByteBufAllocator alloc;
    /** The receiver's buffer (a slice of exactly {@code total} bytes, writer index 0), or null: copies. */
    private ByteBuf target;
    private int total;
    /** In order so far: the one received range is {@code [0, inOrderEnd)}, the copies in {@link #inOrderCopies}. */
    private boolean inOrder = true;
    private int inOrderEnd;
    private final ArrayList<ByteBuf> inOrderCopies = new ArrayList<>();
    /** Out of order: the merged received ranges and the copies by start; null until then. */
    private TreeMap<Integer, Integer> ranges;
    private TreeMap<Integer, ByteBuf> copies;
    private int received;

    private Fragments(ByteBufAllocator alloc, ByteBuf target, int total) {
        reset(alloc, target, total);
    }

    /**
     * Makes this object track a new message, as the static factories would make one: copies from {@code alloc} (when
     * not null), else in place in {@code target} (when not null), else only counted. It must hold nothing: taken or
     * released.
     */
    Fragments reset(ByteBufAllocator alloc, ByteBuf target, int total) {
        this.alloc = alloc;
        this.target = target;
        this.total = total;
        this.inOrder = true;
        this.inOrderEnd = 0;
        this.inOrderCopies.clear();
        this.ranges = null;
        this.copies = null;
        this.received = 0;
        return this;
    }

    /** Fragments copied into buffers from {@code alloc} as they arrive. */
    static Fragments copied(ByteBufAllocator alloc, int total) {
        return new Fragments(alloc, null, total);
    }

    /** Fragments only counted, their bytes dropped (nobody will receive the message). */
    static Fragments counted(int total) {
        return new Fragments(null, null, total);
    }

    /** Fragments written into {@code target}, a buffer of {@code total} writable bytes the receiver owns. */
    static Fragments inPlace(ByteBuf target, int total) {
        return new Fragments(null, target, total);
    }

    int total() {
        return total;
    }

    int received() {
        return received;
    }

    boolean isComplete() {
        return received == total;
    }

    boolean isInPlace() {
        return target != null;
    }

    /**
     * Takes the readable bytes of {@code payload} as the message's bytes from {@code offset} on (indices left alone);
     * returns how many. {@code what} names the message in an error, by its {@code toString()} (built only then).
     *
     * @throws ProtocolException when they lie outside the message or overlap bytes already received
     */
    int add(long offset, ByteBuf payload, Object what) {
        int n = payload.readableBytes();
        if (offset < 0 || offset > total - n) {
            throw new ProtocolException("fragment [" + offset + ", +" + n + ") lies outside " + what + " of " + total
                    + " bytes");
        }
        if (n == 0) {
            return 0;
        }
        int start = (int) offset;
        int end = start + n;
        if (overlaps(start, end)) {
            throw new ProtocolException("fragment [" + start + ", +" + n + ") of " + what + " overlaps bytes "
                    + "received already");
        }
        if (inOrder && start != inOrderEnd) {
            leaveOrder();
        }
        ByteBuf copy = null;
        if (target != null) {
            if (!placedThere(payload, start)) {
                Buffers.copy(payload, payload.readerIndex(), target, start, n);
            }
        } else if (alloc != null) {
            copy = Buffers.append(payload, payload.readerIndex(), alloc.buffer(n, n), n);
        }
        if (inOrder) {
            inOrderEnd = end;
            if (copy != null) {
                inOrderCopies.add(copy);
            }
        } else {
            if (copy != null) {
                copies.put(start, copy);
            }
            Map.Entry<Integer, Integer> before = ranges.floorEntry(start);
            Map.Entry<Integer, Integer> after = ranges.ceilingEntry(start);
            int mergedStart = start;
            int mergedEnd = end;
            if (before != null && before.getValue() == start) {
                mergedStart = before.getKey();
            }
            if (after != null && after.getKey() == end) {
                mergedEnd = ranges.remove(after.getKey());
            }
            ranges.put(mergedStart, mergedEnd);
        }
        received += n;
        return n;
    }

    /** The first fragment out of order: what the in-order fields held goes into the maps. */
    private void leaveOrder() {
        inOrder = false;
        ranges = new TreeMap<>();
        if (inOrderEnd > 0) {
            ranges.put(0, inOrderEnd);
        }
        if (alloc != null) {
            copies = new TreeMap<>();
            int at = 0;
            for (ByteBuf c : inOrderCopies) {
                copies.put(at, c);
                at += c.readableBytes();
            }
        }
        inOrderCopies.clear();
    }

    /**
     * A slice of the receiver's buffer ({@link #inPlace}) for the {@code n} bytes at {@code offset}, writer index 0,
     * for a transport to write a fragment into before it arrives; null when the fragments are not in place or the
     * range lies outside the message or overlaps bytes received (the fragment then arrives the ordinary way and fails
     * in {@link #add}). The fragment still goes through {@link #add}, which then finds its bytes in place.
     */
    ByteBuf placeFor(long offset, int n) {
        if (target == null || n <= 0 || offset < 0 || offset > total - n) {
            return null;
        }
        int start = (int) offset;
        return overlaps(start, start + n) ? null : target.retainedSlice(start, n).clear();
    }

    /** Whether [start, end) overlaps bytes received already. */
    private boolean overlaps(int start, int end) {
        if (inOrder) {
            return start < inOrderEnd;
        }
        Map.Entry<Integer, Integer> before = ranges.floorEntry(start);
        Map.Entry<Integer, Integer> after = ranges.ceilingEntry(start);
        return (before != null && before.getValue() > start) || (after != null && after.getKey() < end);
    }

    /** Whether {@code payload}'s bytes are the target's at {@code index} already (written there by the transport). */
    private boolean placedThere(ByteBuf payload, int index) {
        return placedAt(payload, target, index);
    }

    /** Whether {@code payload}'s readable bytes lie in {@code target} at {@code index} (a transport placed them). */
    static boolean placedAt(ByteBuf payload, ByteBuf target, int index) {
        return payload.hasMemoryAddress() && target.hasMemoryAddress()
                && payload.memoryAddress() + payload.readerIndex() == target.memoryAddress() + index;
    }

    /**
     * The whole message, once complete, as one buffer the caller owns (writer index at its end): the receiver's own
     * buffer in place, else the copies composed in order (or the one copy); null when only {@link #counted}.
     */
    ByteBuf take() {
        if (!isComplete()) {
            throw new IllegalStateException(received + " of " + total + " bytes received");
        }
        if (target != null) {
            return target.writerIndex(total);
        }
        if (alloc == null) {
            return null;
        }
        if (inOrder) {
            return compose(inOrderCopies);
        }
        ArrayList<ByteBuf> parts = new ArrayList<>(copies.values());
        copies.clear();
        return compose(parts);
    }

    /** The copies, in order, as one buffer; {@code parts} left empty, each part released or returned. */
    private ByteBuf compose(ArrayList<ByteBuf> parts) {
        if (parts.isEmpty()) {
            return alloc.buffer(0, 0);
        }
        if (parts.size() == 1) {
            ByteBuf only = parts.get(0);
            parts.clear();
            return only;
        }
        // One buffer, not a composite of every fragment: a 256 MiB message arrives as thousands of fragments, and a
        // composite of thousands of components turns into a heap copy of the whole at the first nioBuffer() or
        // getBytes() a user makes of it. Briefly twice the message's memory, as a copy from the sender's would be.
        ByteBuf whole = alloc.buffer(total, total);
        try {
            for (int i = 0; i < parts.size(); i++) {
                ByteBuf part = parts.get(i);
                Buffers.append(part, part.readerIndex(), whole, part.readableBytes());
            }
        } catch (RuntimeException | Error e) {
            whole.release();
            releaseAll(parts);
            throw e;
        }
        releaseAll(parts);
        return whole;
    }

    private static void releaseAll(ArrayList<ByteBuf> parts) {
        for (int i = 0; i < parts.size(); i++) {
            parts.get(i).release();
        }
        parts.clear();
    }

    /**
     * From now on the bytes are only counted, as {@link #counted}'s: what it holds is released (the buffer of the
     * whole included), what arrived and where is kept, so a fragment still outside or overlapping fails as before.
     */
    void countOnly() {
        release();
        target = null;
        alloc = null;
    }

    /** Releases what it holds, the receiver's buffer (a retained slice) included; not after {@link #take}. */
    void release() {
        if (target != null) {
            target.release();
        }
        releaseAll(inOrderCopies);
        if (copies != null) {
            for (ByteBuf b : copies.values()) {
                b.release();
            }
            copies.clear();
        }
    }
}
