package io.nucx;

import io.nucx.transport.Capability;

import java.nio.BufferOverflowException;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;

/**
 * A worker's address: who it is and, per transport, how to reach it and what that transport costs. Both peers run
 * lane selection on the packed values (floats included), so both compute the same lanes.
 *
 * <pre>
 * version 3, little-endian:
 *  +---------+---------+-----------------+----------+------------+----------+
 *  | version |  flags  |   worker uuid   | name len |    name    | tl count |
 *  |   u8    |   u8    |       u64       |    u8    |  (utf-8)   |    u8    |
 *  +---------+---------+-----------------+----------+------------+----------+
 *  then tl count times:
 *  +----------+------+----------+-----------+-----------+---------+----------+-----------+------+
 *  | name len | name | caps u64 | max short | max bcopy | latency | overhead | bandwidth | prio |
 *  |    u8    |      | UCT bits |    u32    |    u32    | f32 (s) |  f32 (s) | f32 (B/s) |  u8  |
 *  +----------+------+----------+-----------+-----------+---------+----------+-----------+------+
 *  +-----------+----------------+-------------+---------------+
 *  | dev len u8| device address | if len u8   | iface address |
 *  +-----------+----------------+-------------+---------------+
 * </pre>
 * Decoding rejects an unknown version, a truncated blob, trailing bytes and blobs over {@link #MAX_LENGTH}.
 */
public record WorkerAddress(long uuid, String name, List<Entry> entries) {

    /**
     * The only version this code writes and reads: of this layout and of the protocols' headers behind it, so that
     * workers that would not understand each other's frames do not connect (2: RNDV_RTR carries the placed fragment;
     * 3: a stream's end is acknowledged, STREAM_FIN_ACK).
     */
    public static final int VERSION = 3;
    /** The largest blob accepted. */
    public static final int MAX_LENGTH = 4096;

    /** One transport of the worker, as packed. */
    public record Entry(String transport, Set<Capability> capabilities, int maxShort, int maxBcopy, float latency,
                        float overhead, float bandwidth, int priority, byte[] deviceAddress, byte[] ifaceAddress) {
        public boolean has(Capability c) {
            return capabilities.contains(c);
        }

        /** "tcp/7f000001:port" style summary for logs. */
        @Override
        public String toString() {
            return transport + "(lat=" + latency + "s ovh=" + overhead + "s bw=" + bandwidth + "B/s)";
        }
    }

    public WorkerAddress {
        entries = List.copyOf(entries);
    }

    /** Packs the address. */
    public byte[] encode() {
        ByteBuffer b = ByteBuffer.allocate(MAX_LENGTH).order(ByteOrder.LITTLE_ENDIAN);
        try {
            b.put((byte) VERSION).put((byte) 0).putLong(uuid);
            putString(b, name);
            b.put((byte) entries.size());
            for (Entry e : entries) {
                putString(b, e.transport());
                b.putLong(Capability.pack(e.capabilities()));
                b.putInt(e.maxShort()).putInt(e.maxBcopy());
                b.putFloat(e.latency()).putFloat(e.overhead()).putFloat(e.bandwidth());
                b.put((byte) e.priority());
                putBytes(b, e.deviceAddress());
                putBytes(b, e.ifaceAddress());
            }
        } catch (BufferOverflowException ex) {
            throw new IllegalStateException("worker address exceeds " + MAX_LENGTH + " bytes");
        }
        byte[] out = new byte[b.position()];
        b.flip().get(out);
        return out;
    }

    private static void putString(ByteBuffer b, String s) {
        putBytes(b, s.getBytes(StandardCharsets.UTF_8));
    }

    private static void putBytes(ByteBuffer b, byte[] bytes) {
        if (bytes.length > 255) {
            throw new IllegalStateException("address field of " + bytes.length + " bytes exceeds 255");
        }
        b.put((byte) bytes.length).put(bytes);
    }

    /** Unpacks an address; throws {@link InvalidAddressException} naming what was wrong. */
    public static WorkerAddress decode(byte[] blob) {
        if (blob.length > MAX_LENGTH) {
            throw new InvalidAddressException("worker address is " + blob.length + " bytes; at most " + MAX_LENGTH
                    + " accepted");
        }
        if (blob.length < 2) {
            throw new InvalidAddressException("worker address truncated: " + blob.length + " bytes");
        }
        ByteBuffer b = ByteBuffer.wrap(blob).order(ByteOrder.LITTLE_ENDIAN);
        int version = b.get() & 0xff;
        if (version != VERSION) {
            throw new InvalidAddressException("worker address version " + version + " is not supported (this build "
                    + "reads version " + VERSION + ")");
        }
        String field = "header";
        try {
            b.get(); // flags, none defined in version 1
            long uuid = b.getLong();
            field = "worker name";
            String name = getString(b);
            int count = b.get() & 0xff;
            List<Entry> entries = new ArrayList<>(count);
            for (int i = 0; i < count; i++) {
                field = "transport #" + i;
                String tl = getString(b);
                long caps = b.getLong();
                int maxShort = b.getInt();
                int maxBcopy = b.getInt();
                float lat = b.getFloat();
                float ovh = b.getFloat();
                float bw = b.getFloat();
                int prio = b.get() & 0xff;
                byte[] dev = getBytes(b);
                byte[] iface = getBytes(b);
                if (maxShort < 0 || maxBcopy < 0 || !(lat >= 0) || !(ovh >= 0) || !(bw > 0)) {
                    throw new InvalidAddressException("worker address transport '" + tl + "' has impossible "
                            + "attributes (max short " + maxShort + ", max bcopy " + maxBcopy + ", latency " + lat
                            + ", overhead " + ovh + ", bandwidth " + bw + ")");
                }
                entries.add(new Entry(tl, Capability.unpack(caps), maxShort, maxBcopy, lat, ovh, bw, prio, dev, iface));
            }
            if (b.hasRemaining()) {
                throw new InvalidAddressException("worker address has " + b.remaining() + " trailing bytes after "
                        + count + " transports");
            }
            return new WorkerAddress(uuid, name, entries);
        } catch (BufferUnderflowException ex) {
            throw new InvalidAddressException("worker address truncated in " + field + " at byte " + b.position()
                    + " of " + blob.length);
        }
    }

    /**
     * A name field, strictly UTF-8: a lenient decode would turn each malformed byte into U+FFFD (three bytes), and the
     * address would no longer pack into its own fields (found by fuzzing: a 255-byte name became 374).
     */
    private static String getString(ByteBuffer b) {
        byte[] bytes = getBytes(b);
        try {
            return StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(bytes)).toString();
        } catch (CharacterCodingException e) {
            throw new InvalidAddressException("worker address has a name field that is not UTF-8 (" + bytes.length
                    + " bytes)");
        }
    }

    private static byte[] getBytes(ByteBuffer b) {
        int n = b.get() & 0xff;
        byte[] out = new byte[n];
        b.get(out);
        return out;
    }

    /** Hex form, for command lines and logs. */
    public String toHex() {
        return HexFormat.of().formatHex(encode());
    }

    /** Parses the hex form. */
    public static WorkerAddress fromHex(String hex) {
        try {
            return decode(HexFormat.of().parseHex(hex.trim()));
        } catch (IllegalArgumentException e) {
            if (e instanceof InvalidAddressException) {
                throw e;
            }
            throw new InvalidAddressException("worker address is not hex: " + e.getMessage());
        }
    }

    @Override
    public String toString() {
        return "WorkerAddress(" + name + " " + Long.toHexString(uuid) + " " + entries + ")";
    }
}
