package io.nucx.protocol;

import io.netty.buffer.ByteBuf;

import java.util.ArrayList;
import java.util.List;

/**
 * Remote keys of one region for several devices at once (UCX packs one rkey buffer with an entry per memory domain):
 * memory registered on each of the owner's RMA devices, each transport key tagged with the index of that device's
 * entry in the owner's worker address. A peer's RMA lane reaches one device of the owner, so it takes the key tagged
 * with its {@link RmaRail#remoteEntry()}; a device nobody registered on has no key, and that lane is not used.
 * <pre>
 *  +----------+---------------------------------------------------+
 *  | count:u8 | count x { owner entry:u8 | length:u8 | key bytes } |
 *  +----------+---------------------------------------------------+
 * </pre>
 */
public final class KeyBundle {

    /** At most this many keys (one per device of the owner). */
    public static final int MAX_KEYS = 16;

    /** One transport key and the owner's address entry (device) it was registered on. */
    public record Key(int ownerEntry, byte[] key) {
        public Key {
            check(ownerEntry, key);
        }

        private static void check(int ownerEntry, byte[] key) {
            if (ownerEntry < 0 || ownerEntry > 255 || key.length == 0 || key.length > 255) {
                throw new IllegalArgumentException("a bundled key needs an entry 0..255 and 1..255 bytes (entry "
                        + ownerEntry + ", " + key.length + " bytes)");
            }
        }
    }

    private KeyBundle() {
    }

    /** Packs {@code keys}, at most {@link #MAX_KEYS}. */
    public static byte[] pack(List<Key> keys) {
        if (keys.isEmpty() || keys.size() > MAX_KEYS) {
            throw new IllegalArgumentException("a key bundle holds 1 to " + MAX_KEYS + " keys, not " + keys.size());
        }
        int n = 1;
        for (Key k : keys) {
            n += 2 + k.key().length;
        }
        byte[] out = new byte[n];
        out[0] = (byte) keys.size();
        int at = 1;
        for (Key k : keys) {
            out[at++] = (byte) k.ownerEntry();
            out[at++] = (byte) k.key().length;
            System.arraycopy(k.key(), 0, out, at, k.key().length);
            at += k.key().length;
        }
        return out;
    }

    /** Packs one key: {@code pack(List.of(new Key(ownerEntry, key)))} without the list (a rendezvous send's usual). */
    public static byte[] pack(int ownerEntry, byte[] key) {
        Key.check(ownerEntry, key);
        byte[] out = new byte[3 + key.length];
        out[0] = 1;
        out[1] = (byte) ownerEntry;
        out[2] = (byte) key.length;
        System.arraycopy(key, 0, out, 3, key.length);
        return out;
    }

    /**
     * The keys in {@code packed}'s readable bytes (its indexes are left alone).
     *
     * @throws IllegalArgumentException naming what is malformed: a count out of range, a key running past the end,
     *                                  bytes after the last key, one device named twice
     */
    public static List<Key> unpack(ByteBuf packed) {
        scan(packed, -1);
        int at = packed.readerIndex();
        int count = packed.getUnsignedByte(at++);
        List<Key> keys = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            int length = packed.getUnsignedByte(at + 1);
            byte[] key = new byte[length];
            packed.getBytes(at + 2, key);
            keys.add(new Key(packed.getUnsignedByte(at), key));
            at += 2 + length;
        }
        return keys;
    }

    /**
     * The key registered on the owner's entry {@code ownerEntry} in {@code packed}'s readable bytes, as a slice of
     * them (no copy, no list: what a rendezvous receiver needs of each message's bundle), or null when it has none.
     * The whole bundle is checked, as {@link #unpack} checks it.
     *
     * @throws IllegalArgumentException as {@link #unpack}
     */
    public static ByteBuf keyIn(ByteBuf packed, int ownerEntry) {
        long where = scan(packed, ownerEntry);
        return where < 0 ? null : packed.slice((int) (where >>> 8), (int) (where & 0xff));
    }

    /**
     * Checks the bundle in {@code packed}'s readable bytes without allocating; returns where the key of {@code wanted}
     * lies ({@code index << 8 | length}), or -1 when no key has that entry.
     */
    private static long scan(ByteBuf packed, int wanted) {
        int first = packed.readerIndex();
        int end = packed.writerIndex();
        if (first >= end) {
            throw new IllegalArgumentException("empty key bundle");
        }
        int count = packed.getUnsignedByte(first);
        if (count == 0 || count > MAX_KEYS) {
            throw new IllegalArgumentException("key bundle of " + count + " keys (1 to " + MAX_KEYS + ")");
        }
        long found = -1;
        int at = first + 1;
        for (int i = 0; i < count; i++) {
            if (end - at < 2) {
                throw new IllegalArgumentException("key bundle ends inside key " + i + " of " + count);
            }
            int entry = packed.getUnsignedByte(at);
            int length = packed.getUnsignedByte(at + 1);
            if (length == 0 || length > end - at - 2) {
                throw new IllegalArgumentException("key " + i + " of the bundle claims " + length + " bytes, "
                        + (end - at - 2) + " are left");
            }
            for (int before = first + 1; before < at; before += 2 + packed.getUnsignedByte(before + 1)) {
                if (packed.getUnsignedByte(before) == entry) {
                    throw new IllegalArgumentException("key bundle names device entry " + entry + " twice");
                }
            }
            if (entry == wanted) {
                found = (long) (at + 2) << 8 | length;
            }
            at += 2 + length;
        }
        if (at != end) {
            throw new IllegalArgumentException("key bundle has " + (end - at) + " bytes after its " + count
                    + " keys");
        }
        return found;
    }

    /** The key registered on the owner's entry {@code ownerEntry}, or null. */
    public static byte[] keyFor(List<Key> keys, int ownerEntry) {
        for (Key k : keys) {
            if (k.ownerEntry() == ownerEntry) {
                return k.key();
            }
        }
        return null;
    }
}
