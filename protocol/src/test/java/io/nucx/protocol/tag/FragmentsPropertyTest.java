package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.nucx.protocol.ProtocolException;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.stream.LongStream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Properties of {@link Fragments}, the reassembly of a message from fragments, over 60 generated cases each (a
 * seeded random message length up to 4 KiB, cut at random points, fragments shuffled; the failing seed is the case's
 * name): whatever the cut and the arrival order, the message comes out whole and identical and what is held is what
 * arrived; a fragment that overlaps or leaves the message is refused and changes nothing.
 */
class FragmentsPropertyTest {

    private static final UnpooledByteBufAllocator ALLOC = new UnpooledByteBufAllocator(false, true);

    static LongStream seeds() {
        return LongStream.range(0, 60).map(i -> i * 0x9E3779B97F4A7C15L);
    }

    /** A message, and its fragments {offset, length} in arrival order. */
    private record Case(byte[] message, List<int[]> fragments) {
        static Case of(long seed) {
            Random r = new Random(seed);
            byte[] m = new byte[r.nextInt(4097)];
            r.nextBytes(m);
            List<int[]> cuts = new ArrayList<>();
            for (int at = 0; at < m.length; ) {
                int n = 1 + r.nextInt(Math.min(m.length - at, 1 + r.nextInt(600)));
                cuts.add(new int[] {at, n});
                at += n;
            }
            Collections.shuffle(cuts, r);
            return new Case(m, cuts);
        }
    }

    @ParameterizedTest(name = "seed {0}")
    @MethodSource("seeds")
    void anyArrivalOrderGivesTheMessageBack(long seed) {
        Case c = Case.of(seed);
        int total = c.message().length;
        boolean inPlace = (seed & 1) == 0;
        Fragments f = inPlace ? Fragments.inPlace(Unpooled.buffer(total), total) : Fragments.copied(ALLOC, total);
        int received = 0;
        for (int[] frag : c.fragments()) {
            assertTrue(!f.isComplete());
            assertEquals(frag[1], f.add(frag[0], Unpooled.wrappedBuffer(c.message(), frag[0], frag[1]), "test"));
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

    @ParameterizedTest(name = "seed {0}")
    @MethodSource("seeds")
    void overlapsAndStrayFragmentsAreRefusedAndChangeNothing(long seed) {
        Case c = Case.of(seed);
        int total = c.message().length;
        if (total == 0) {
            return;
        }
        Random r = new Random(~seed);
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
