package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.nucx.protocol.ProtocolException;
import io.nucx.transport.testing.RandomCases;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Properties of {@link Fragments}, the reassembly of a message from fragments, over 60 generated cases each
 * ({@link RandomCases}: a random message length up to 4 KiB, cut at random points, fragments in order, shuffled after
 * an in-order prefix or shuffled throughout, held in place or copied, heap or direct, in a new object or one reset): whatever the cut and the arrival order, the message comes out whole and identical and what is held is
 * what arrived; a fragment that overlaps or leaves the message is refused and changes nothing.
 */
class FragmentsPropertyTest {

    private static final UnpooledByteBufAllocator ALLOC = new UnpooledByteBufAllocator(false, true);

    private static final int CASES = 60;

    /**
     * A message, its fragments {offset, length} in arrival order, whether it is reassembled in place, and a random
     * stream for what the check itself draws.
     */
    private record Case(byte[] message, List<int[]> fragments, boolean inPlace, boolean direct, boolean reuse,
                        SplittableRandom more) {
        static Case of(SplittableRandom r) {
            byte[] m = new byte[r.nextInt(4097)];
            r.nextBytes(m);
            List<int[]> cuts = new ArrayList<>();
            for (int at = 0; at < m.length; ) {
                int n = 1 + r.nextInt(Math.min(m.length - at, 1 + r.nextInt(600)));
                cuts.add(new int[] {at, n});
                at += n;
            }
            // In order (as one lane delivers), in order for a while and then any order, or any order from the start:
            // the in-order bookkeeping, its hand-over to the sorted one, and the sorted one alone.
            int inOrder = switch (r.nextInt(3)) {
                case 0 -> cuts.size();
                case 1 -> r.nextInt(cuts.size() + 1);
                default -> 0;
            };
            for (int i = cuts.size() - 1; i > inOrder; i--) { // Fisher-Yates over what follows the in-order prefix
                int j = inOrder + r.nextInt(i - inOrder + 1);
                cuts.set(i, cuts.set(j, cuts.get(i)));
            }
            return new Case(m, cuts, r.nextBoolean(), r.nextBoolean(), r.nextBoolean(), r.split());
        }

        @Override
        public String toString() {
            return message.length + " bytes " + (inPlace ? "in place" : "copied") + (direct ? ", direct" : ", heap")
                    + (reuse ? ", reset" : ", new") + ", fragments (offset+length) "
                    + fragments.stream().map(f -> f[0] + "+" + f[1]).collect(Collectors.joining(" "));
        }
    }

    /** One object reset for each case that reuses ({@link Fragments#reset}), as EagerReceiver does. */
    private static Fragments reused;

    @Test
    void anyArrivalOrderGivesTheMessageBack() {
        RandomCases.forAll("any arrival order gives the message back", CASES, Case::of,
                FragmentsPropertyTest::reassemble);
    }

    private static void reassemble(Case c) {
        int total = c.message().length;
        boolean inPlace = c.inPlace();
        ByteBuf target = !inPlace ? null : c.direct() ? Unpooled.directBuffer(total) : Unpooled.buffer(total);
        Fragments f;
        if (c.reuse() && reused != null) {
            f = reused.reset(inPlace ? null : ALLOC, target, total);
        } else {
            f = inPlace ? Fragments.inPlace(target, total) : Fragments.copied(ALLOC, total);
        }
        if (c.reuse()) {
            reused = f;
        }
        int received = 0;
        for (int[] frag : c.fragments()) {
            assertTrue(!f.isComplete());
            ByteBuf payload = c.direct()
                    ? Unpooled.directBuffer(frag[1]).writeBytes(c.message(), frag[0], frag[1])
                    : Unpooled.wrappedBuffer(c.message(), frag[0], frag[1]);
            try {
                assertEquals(frag[1], f.add(frag[0], payload, "test"));
            } finally {
                payload.release();
            }
            received += frag[1];
            assertEquals(received, f.received(), "held is what arrived");
        }
        assertTrue(f.isComplete());
        ByteBuf whole = f.take();
        try {
            byte[] out = new byte[whole.readableBytes()];
            whole.getBytes(whole.readerIndex(), out);
            assertArrayEquals(c.message(), out);
        } finally {
            whole.release();
        }
    }

    @Test
    void overlapsAndStrayFragmentsAreRefusedAndChangeNothing() {
        RandomCases.forAll("overlaps and stray fragments are refused and change nothing", CASES, Case::of,
                FragmentsPropertyTest::refuseStrays);
    }

    private static void refuseStrays(Case c) {
        int total = c.message().length;
        if (total == 0) {
            return;
        }
        SplittableRandom r = c.more();
        Fragments f = Fragments.copied(ALLOC, total);
        try {
            int[] first = c.fragments().get(0);
            f.add(first[0], Unpooled.wrappedBuffer(c.message(), first[0], first[1]), "test");
            int start = Math.max(0, first[0] - r.nextInt(8));
            int end = Math.min(total, first[0] + 1 + r.nextInt(first[1] + 8));
            ByteBuf overlap = Unpooled.wrappedBuffer(new byte[end - start]);
            assertThrows(ProtocolException.class, () -> f.add(start, overlap, "test"));
            int beyond = total - r.nextInt(Math.min(total, 4));
            assertThrows(ProtocolException.class, () -> f.add(beyond, Unpooled.wrappedBuffer(new byte[5]), "test"));
            assertThrows(ProtocolException.class, () -> f.add(-1, Unpooled.wrappedBuffer(new byte[1]), "test"));
            assertEquals(first[1], f.received(), "a refused fragment changes nothing");
        } finally {
            f.release();
        }
    }
}
