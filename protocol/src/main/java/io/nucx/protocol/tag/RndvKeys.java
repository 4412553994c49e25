package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.nucx.protocol.KeyBundle;
import io.nucx.protocol.MemoryDomain;
import io.nucx.protocol.ProtocolException;
import io.nucx.protocol.RmaRail;
import io.nucx.protocol.RmaTransfer;
import io.nucx.transport.Buffers;
import io.nucx.transport.rma.InvalidRemoteKeyException;
import io.nucx.transport.rma.MemoryRegistration;
import io.nucx.transport.rma.RemoteKey;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * The rendezvous protocols' side of remote keys: what memory can be exposed, exposing it on every rail (one
 * {@link KeyBundle} with a key per device of ours), and checking the keys that arrived.
 */
final class RndvKeys {

    private RndvKeys() {
    }

    /**
     * Bytes {@code [index, index + length)} of {@code buf} as one run of native memory, or null when they are not
     * (heap memory, which the GC moves; a composite of several runs; nothing at all).
     */
    static MemorySegment nativeRun(ByteBuf buf, int index, int length) {
        return length == 0 ? null : Buffers.nativeRun(buf, index, length);
    }

    /**
     * Exposes {@code run} on each memory domain (an iface-wide registration every peer lane of that device can use),
     * adding each registration to {@code out}, and returns the bundle of their keys for the peer.
     */
    static byte[] offerOnDomains(List<MemoryDomain> domains, MemorySegment run, List<MemoryRegistration> out) {
        if (domains.size() == 1) { // one device: its key alone, no list
            MemoryDomain d = domains.get(0);
            MemoryRegistration m = d.iface().registerMemory(run);
            out.add(m);
            return KeyBundle.pack(d.entry(), m.packedKey());
        }
        List<KeyBundle.Key> keys = new ArrayList<>(domains.size());
        for (MemoryDomain d : domains) {
            if (KeyBundle.keyFor(keys, d.entry()) != null) {
                continue;
            }
            MemoryRegistration m = d.iface().registerMemory(run);
            out.add(m);
            keys.add(new KeyBundle.Key(d.entry(), m.packedKey()));
        }
        return KeyBundle.pack(keys);
    }

    /**
     * Exposes {@code run} on the device of each rail (once per device), adding each registration to {@code out}, and
     * returns the bundle of their keys for the peer.
     */
    static byte[] offerOnRails(List<RmaRail> rails, MemorySegment run, List<MemoryRegistration> out) {
        List<KeyBundle.Key> keys = new ArrayList<>(rails.size());
        for (RmaRail rail : rails) {
            if (KeyBundle.keyFor(keys, rail.localEntry()) != null) {
                continue; // a second rail from the same device uses the same key
            }
            MemoryRegistration m = rail.lane().register(run);
            out.add(m);
            keys.add(new KeyBundle.Key(rail.localEntry(), m.packedKey()));
        }
        return KeyBundle.pack(keys);
    }

    /**
     * The peer's keys for a {@code size}-byte message, each unpacked by the rail that reaches the device it was
     * registered on; rails the bundle has no key for are left out (the result may be empty: then RMA cannot be used).
     *
     * @param frame and {@code reqId} name the frame, for the error (the text is made only for one)
     * @throws ProtocolException when the bundle is malformed, a rail refuses its key (saying why), or a key does not
     *                           cover exactly {@code size}
     */
    static List<RmaTransfer.RailKey> unpack(List<RmaRail> rails, ByteBuf packed, long size, String frame,
                                            long reqId) {
        List<RmaTransfer.RailKey> out = null;
        for (int i = 0; i < rails.size(); i++) {
            RmaRail rail = rails.get(i);
            ByteBuf k;
            try {
                k = KeyBundle.keyIn(packed, rail.remoteEntry());
            } catch (IllegalArgumentException e) {
                throw new ProtocolException(frame + " " + reqId + ": malformed remote key bundle: " + e.getMessage());
            }
            if (k == null) {
                continue;
            }
            RemoteKey key;
            try {
                key = rail.lane().unpackKey(k);
            } catch (InvalidRemoteKeyException e) {
                throw new ProtocolException(frame + " " + reqId + ": remote key for " + rail.name()
                        + " is invalid: " + e.getMessage());
            }
            if (key.length() != size) {
                throw new ProtocolException(frame + " " + reqId + ": remote key covers " + key.length()
                        + " bytes of a " + size + "-byte message");
            }
            RmaTransfer.RailKey rk = new RmaTransfer.RailKey(rail, key);
            if (rails.size() == 1) {
                return List.of(rk); // the usual: one rail, one key
            }
            if (out == null) {
                out = new ArrayList<>(rails.size());
            }
            out.add(rk);
        }
        return out == null ? List.of() : out;
    }

    /** The rails of {@code keys} whose lane is still active: {@code keys} itself when all are. */
    static List<RmaTransfer.RailKey> live(List<RmaTransfer.RailKey> keys) {
        int active = 0;
        for (int i = 0; i < keys.size(); i++) {
            if (keys.get(i).rail().lane().channel().isActive()) {
                active++;
            }
        }
        if (active == keys.size()) {
            return keys;
        }
        List<RmaTransfer.RailKey> out = new ArrayList<>(active);
        for (RmaTransfer.RailKey k : keys) {
            if (k.rail().lane().channel().isActive()) {
                out.add(k);
            }
        }
        return out;
    }
}
