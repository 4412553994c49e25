package io.nucx.wireup;

import io.nucx.InvalidAddressException;
import io.nucx.WorkerAddress;
import io.nucx.transport.Capability;
import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.EnumSet;
import java.util.HexFormat;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.IntStream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

class WorkerAddressTest {

    static WorkerAddress.Entry tcp() {
        return new WorkerAddress.Entry("tcp", EnumSet.of(Capability.AM_SHORT, Capability.AM_BCOPY, Capability.PENDING,
                Capability.CONNECT_TO_IFACE), 8192, 65536, 5.2e-6f, 50e-6f, 1.25e9f, 3,
                new byte[] {1, 2, 3, 4, 5, 6, 7, 8, 127, 0, 0, 1}, new byte[] {(byte) 0x90, 0x1f});
    }

    static WorkerAddress.Entry self() {
        return new WorkerAddress.Entry("self", EnumSet.of(Capability.AM_SHORT, Capability.AM_BCOPY, Capability.CB_SYNC,
                Capability.ERRHANDLE_PEER_FAILURE), 8192, 65536, 0f, 1e-8f, 6.9e9f, 0,
                new byte[] {9, 8, 7, 6, 5, 4, 3, 2}, new byte[] {1, 0, 0, 0, 0, 0, 0, 0});
    }

    static WorkerAddress sample() {
        return new WorkerAddress(0x0123_4567_89ab_cdefL, "wörker-1", List.of(tcp(), self()));
    }

    private static void assertEntryEquals(WorkerAddress.Entry expected, WorkerAddress.Entry actual) {
        assertEquals(expected.transport(), actual.transport());
        assertEquals(expected.capabilities(), actual.capabilities());
        assertEquals(expected.maxShort(), actual.maxShort());
        assertEquals(expected.maxBcopy(), actual.maxBcopy());
        assertEquals(expected.latency(), actual.latency());
        assertEquals(expected.overhead(), actual.overhead());
        assertEquals(expected.bandwidth(), actual.bandwidth());
        assertEquals(expected.priority(), actual.priority());
        assertArrayEquals(expected.deviceAddress(), actual.deviceAddress());
        assertArrayEquals(expected.ifaceAddress(), actual.ifaceAddress());
    }

    private static void assertAddressEquals(WorkerAddress expected, WorkerAddress actual) {
        assertEquals(expected.uuid(), actual.uuid());
        assertEquals(expected.name(), actual.name());
        assertEquals(expected.entries().size(), actual.entries().size());
        for (int i = 0; i < expected.entries().size(); i++) {
            assertEntryEquals(expected.entries().get(i), actual.entries().get(i));
        }
    }

    @Test
    void addressWithTwoTransportsSurvivesEncodeAndDecode() {
        WorkerAddress a = sample();
        byte[] blob = a.encode();
        WorkerAddress b = WorkerAddress.decode(blob);
        assertAddressEquals(a, b);
        assertArrayEquals(blob, b.encode(), "re-encoding gives the same bytes");
    }

    @Test
    void addressSurvivesHexForm() {
        WorkerAddress a = sample();
        String hex = a.toHex();
        assertTrue(hex.matches("[0-9a-f]+"), hex);
        assertAddressEquals(a, WorkerAddress.fromHex("  " + hex + "\n"));
    }

    @Test
    void addressWithoutTransportsSurvives() {
        WorkerAddress a = new WorkerAddress(1, "", List.of());
        assertAddressEquals(a, WorkerAddress.decode(a.encode()));
    }

    @Test
    void encodedLayoutStartsWithVersionFlagsAndLittleEndianUuid() {
        byte[] blob = sample().encode();
        assertEquals(WorkerAddress.VERSION, blob[0]);
        assertEquals(0, blob[1]);
        assertEquals((byte) 0xef, blob[2], "uuid is little-endian");
        assertEquals((byte) 0x01, blob[9]);
    }

    @Test
    void unknownVersionIsRejected() {
        byte[] blob = sample().encode();
        for (int other : new int[] {WorkerAddress.VERSION - 1, WorkerAddress.VERSION + 1}) {
            blob[0] = (byte) other; // an older build's (another RNDV_RTR layout) or a newer one's
            InvalidAddressException e = assertThrows(InvalidAddressException.class,
                    () -> WorkerAddress.decode(blob));
            assertTrue(e.getMessage().contains("worker address version " + other + " is not supported"),
                    e.getMessage());
        }
    }

    @Test
    void everyTruncationIsRejectedAsAnInvalidAddress() {
        byte[] blob = sample().encode();
        for (int n = 0; n < blob.length; n++) {
            byte[] prefix = Arrays.copyOf(blob, n);
            try {
                WorkerAddress.decode(prefix);
                fail("a " + n + "-byte prefix of a " + blob.length + "-byte address decoded");
            } catch (InvalidAddressException expected) {
                assertTrue(expected.getMessage().contains("truncated"), n + ": " + expected.getMessage());
            } catch (RuntimeException other) {
                throw new AssertionError("a " + n + "-byte prefix threw " + other, other);
            }
        }
    }

    /** Fuzzing's finding: a name of malformed UTF-8 decoded leniently grew past its field when packed again. */
    @Test
    void aNameThatIsNotUtf8IsRejected() {
        byte[] blob = new WorkerAddress(1, "x", List.of()).encode();
        int at = 1 + 1 + 8 + 1; // version, flags, uuid, name length: the name's one byte
        blob[at] = (byte) 0xff;
        InvalidAddressException e = assertThrows(InvalidAddressException.class, () -> WorkerAddress.decode(blob));
        assertTrue(e.getMessage().contains("not UTF-8"), e.getMessage());
    }

    @Test
    void trailingByteIsRejected() {
        byte[] blob = sample().encode();
        byte[] longer = Arrays.copyOf(blob, blob.length + 1);
        InvalidAddressException e = assertThrows(InvalidAddressException.class, () -> WorkerAddress.decode(longer));
        assertTrue(e.getMessage().contains("trailing"), e.getMessage());
    }

    @Test
    void blobOverTheMaximumIsRejectedBeforeParsing() {
        byte[] huge = new byte[WorkerAddress.MAX_LENGTH + 1];
        huge[0] = WorkerAddress.VERSION;
        InvalidAddressException e = assertThrows(InvalidAddressException.class, () -> WorkerAddress.decode(huge));
        assertTrue(e.getMessage().contains(String.valueOf(WorkerAddress.MAX_LENGTH)), e.getMessage());
    }

    @Test
    void impossibleAttributesAreRejected() {
        WorkerAddress a = new WorkerAddress(1, "w", List.of(new WorkerAddress.Entry("tcp",
                EnumSet.of(Capability.AM_BCOPY), 1, 1, Float.NaN, 0, 1, 0, new byte[0], new byte[0])));
        byte[] blob = a.encode();
        assertThrows(InvalidAddressException.class, () -> WorkerAddress.decode(blob));
        WorkerAddress zeroBandwidth = new WorkerAddress(1, "w", List.of(new WorkerAddress.Entry("tcp",
                EnumSet.of(Capability.AM_BCOPY), 1, 1, 0, 0, 0, 0, new byte[0], new byte[0])));
        byte[] blob2 = zeroBandwidth.encode();
        assertThrows(InvalidAddressException.class, () -> WorkerAddress.decode(blob2));
    }

    @Test
    void addressTooLargeToEncodeIsRefused() {
        byte[] big = new byte[255];
        List<WorkerAddress.Entry> many = IntStream.range(0, 20).mapToObj(i ->
                new WorkerAddress.Entry("t" + i, EnumSet.of(Capability.AM_BCOPY), 1, 1, 0, 0, 1, 0, big, big)).toList();
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> new WorkerAddress(1, "w", many).encode());
        assertTrue(e.getMessage().contains(String.valueOf(WorkerAddress.MAX_LENGTH)), e.getMessage());
    }

    private static void decodeOrReject(byte[] blob, String what) {
        try {
            WorkerAddress.decode(blob);
        } catch (InvalidAddressException expected) {
            // fine
        } catch (RuntimeException other) {
            throw new AssertionError(what + " threw " + other + " for " + HexFormat.of().formatHex(blob),
                    other);
        }
    }

    @Test
    void randomBlobsEitherDecodeOrAreRejectedAsInvalid() {
        SplittableRandom random = new SplittableRandom(0x5eed);
        for (int i = 0; i < 1000; i++) {
            byte[] blob = new byte[random.nextInt(0, 300)];
            random.nextBytes(blob);
            if (blob.length > 0 && random.nextBoolean()) {
                blob[0] = WorkerAddress.VERSION; // get past the version check half of the time
            }
            decodeOrReject(blob, "random blob " + i);
        }
    }

    @Test
    void corruptedValidAddressesEitherDecodeOrAreRejectedAsInvalid() {
        byte[] valid = sample().encode();
        SplittableRandom random = new SplittableRandom(0xc0ffee);
        for (int i = 0; i < 1000; i++) {
            byte[] blob = valid.clone();
            for (int k = random.nextInt(1, 4); k > 0; k--) {
                blob[random.nextInt(1, blob.length)] = (byte) random.nextInt(256);
            }
            decodeOrReject(blob, "corrupted address " + i);
        }
    }

    @Test
    void nonHexTextIsAnInvalidAddress() {
        assertThrows(InvalidAddressException.class, () -> WorkerAddress.fromHex("not hex at all"));
        assertThrows(InvalidAddressException.class, () -> WorkerAddress.fromHex("abc"));
        assertThrows(InvalidAddressException.class, () -> WorkerAddress.fromHex(""));
    }
}
