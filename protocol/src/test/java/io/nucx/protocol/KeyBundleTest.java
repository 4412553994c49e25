package io.nucx.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link KeyBundle}: what is packed unpacks the same, one key packed alone is the bundle of one, the key of a device is
 * found in place (a slice of the bundle), and a malformed bundle is refused with the same words either way.
 */
class KeyBundleTest {

    private static final byte[] A = {1, 2, 3};
    private static final byte[] B = {9, 8, 7, 6, 5};

    @Test
    void aPackedBundleUnpacksToItsKeysAndEachKeyIsFoundInPlace() {
        byte[] packed = KeyBundle.pack(List.of(new KeyBundle.Key(4, A), new KeyBundle.Key(200, B)));
        ByteBuf buf = Unpooled.wrappedBuffer(new byte[] {42}, packed).readerIndex(1); // not at index 0
        List<KeyBundle.Key> keys = KeyBundle.unpack(buf);
        assertEquals(2, keys.size());
        assertEquals(4, keys.get(0).ownerEntry());
        assertArrayEquals(A, keys.get(0).key());
        assertEquals(200, keys.get(1).ownerEntry());
        assertArrayEquals(B, keys.get(1).key());
        assertArrayEquals(A, ByteBufUtil.getBytes(KeyBundle.keyIn(buf, 4)));
        assertArrayEquals(B, ByteBufUtil.getBytes(KeyBundle.keyIn(buf, 200)));
        assertNull(KeyBundle.keyIn(buf, 5), "no key for that device");
        assertEquals(1, buf.readerIndex(), "indexes left alone");
    }

    @Test
    void oneKeyPackedAloneIsTheBundleOfThatKey() {
        assertArrayEquals(KeyBundle.pack(List.of(new KeyBundle.Key(17, B))), KeyBundle.pack(17, B));
        assertThrows(IllegalArgumentException.class, () -> KeyBundle.pack(256, A));
        assertThrows(IllegalArgumentException.class, () -> KeyBundle.pack(1, new byte[0]));
    }

    @Test
    void aMalformedBundleIsRefusedNamingWhatIsWrongWhetherUnpackedOrSearched() {
        byte[] good = KeyBundle.pack(List.of(new KeyBundle.Key(4, A), new KeyBundle.Key(5, B)));
        byte[] twice = good.clone();
        twice[1 + 2 + A.length] = 4; // the second key names device 4 again
        byte[] trailing = Arrays.copyOf(good, good.length + 1);
        byte[] cut = Arrays.copyOf(good, good.length - 1);
        byte[] countZero = {0};
        byte[] countHigh = {(byte) (KeyBundle.MAX_KEYS + 1)};
        byte[] lengthZero = {1, 4, 0};
        String[][] cases = {
            {"names device entry 4 twice", ByteBufUtil.hexDump(twice)},
            {"1 bytes after its 2 keys", ByteBufUtil.hexDump(trailing)},
            {"key 1 of the bundle claims 5 bytes, 4 are left", ByteBufUtil.hexDump(cut)},
            {"key bundle of 0 keys", ByteBufUtil.hexDump(countZero)},
            {"key bundle of " + (KeyBundle.MAX_KEYS + 1) + " keys", ByteBufUtil.hexDump(countHigh)},
            {"key 0 of the bundle claims 0 bytes", ByteBufUtil.hexDump(lengthZero)},
            {"empty key bundle", ""},
        };
        for (String[] c : cases) {
            ByteBuf bundle = Unpooled.wrappedBuffer(ByteBufUtil.decodeHexDump(c[1]));
            IllegalArgumentException unpacked = assertThrows(IllegalArgumentException.class,
                    () -> KeyBundle.unpack(bundle));
            IllegalArgumentException searched = assertThrows(IllegalArgumentException.class,
                    () -> KeyBundle.keyIn(bundle, 4));
            assertTrue(unpacked.getMessage().contains(c[0]), unpacked.getMessage());
            assertEquals(unpacked.getMessage(), searched.getMessage());
        }
    }
}
