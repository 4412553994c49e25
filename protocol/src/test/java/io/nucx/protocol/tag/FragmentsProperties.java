package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.nucx.protocol.ProtocolException;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Properties of {@link Fragments}, the reassembly of a message from fragments: whatever the cut and the arrival
 * order, the message comes out whole and identical, memory held is what arrived, and a fragment that overlaps or
 * leaves the message is refused without changing anything.
 */
class FragmentsProperties {

    private static final UnpooledByteBufAllocator ALLOC = new UnpooledByteBufAllocator(false, true);

    /** A message, its cut points, and the order fragments arrive in. */
    record Case(byte[] message, List<int[]> fragments) {
    }

    @Provide
    Arbitrary<Case> cases() {
        return Combinators.combine(Arbitraries.integers().between(0, 4096), Arbitraries.longs())
                .as((length, seed) -> {
                    Random r = new Random(seed);
                    byte[] m = new byte[length];
                    r.nextBytes(m);
                    List<int[]> cuts = new ArrayList<>();
                    int at = 0;
                    while (at < length) {
                        int n = 1 + r.nextInt(Math.min(length - at, 1 + r.nextInt(600)));
                        cuts.add(new int[] {at, n});
                        at += n;
                    }
                    Collections.shuffle(cuts, r);
                    return new Case(m, cuts);
                });
    }

    @Property(tries = 300)
    void anyArrivalOrderGivesTheMessageBack(@ForAll("cases") Case c, @ForAll boolean inPlace) {
        int total = c.message().length;
        ByteBuf own = inPlace ? Unpooled.buffer(total) : null;
        Fragments f = inPlace ? Fragments.inPlace(own, total) : Fragments.copied(ALLOC, total);
        int received = 0;
        for (int[] frag : c.fragments()) {
            assertTrue(!f.isComplete());
            ByteBuf payload = Unpooled.wrappedBuffer(c.message(), frag[0], frag[1]);
            assertEquals(frag[1], f.add(frag[0], payload, "test"));
            received += frag[1];
            assertEquals(received, f.received(), "held is what arrived");
        }
        assertTrue(f.isComplete());
        ByteBuf whole = f.take();
        try {
            assertEquals(total, whole.readableBytes());
            byte[] out = new byte[total];
            whole.getBytes(whole.readerIndex(), out);
            assertArrayEquals(c.message(), out);
        } finally {
            whole.release();
        }
    }

    @Property(tries = 300)
    void overlapsAndStrayFragmentsAreRefusedAndChangeNothing(@ForAll("cases") Case c, @ForAll long seed) {
        int total = c.message().length;
        if (total == 0) {
            return;
        }
        Random r = new Random(seed);
        Fragments f = Fragments.copied(ALLOC, total);
        try {
            int[] first = c.fragments().get(0);
            f.add(first[0], Unpooled.wrappedBuffer(c.message(), first[0], first[1]), "test");
            // Any fragment touching a byte of the first overlaps it.
            int start = Math.max(0, first[0] - r.nextInt(8));
            int end = Math.min(total, first[0] + 1 + r.nextInt(first[1] + 8));
            ByteBuf overlap = Unpooled.wrappedBuffer(new byte[end - start]);
            final int s = start;
            assertThrows(ProtocolException.class, () -> f.add(s, overlap, "test"));
            int beyond = total - r.nextInt(Math.min(total, 4));
            assertThrows(ProtocolException.class, () -> f.add(beyond, Unpooled.wrappedBuffer(new byte[5]), "test"));
            assertThrows(ProtocolException.class, () -> f.add(-1, Unpooled.wrappedBuffer(new byte[1]), "test"));
            assertEquals(first[1], f.received(), "a refused fragment changes nothing");
        } finally {
            f.release();
        }
    }
}
