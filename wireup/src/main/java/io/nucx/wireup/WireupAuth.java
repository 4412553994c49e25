package io.nucx.wireup;

import io.nucx.protocol.ProtocolException;
import io.nucx.transport.NucxConfig;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.ArrayDeque;
import java.util.HashSet;
import java.util.Set;
import java.util.function.LongSupplier;

/**
 * Authenticated wireup (NUCX_AUTH_TOKEN or NUCX_AUTH_KEY_FILE): every REQUEST carries a proof that its sender holds
 * the shared key, and a worker with a key refuses a REQUEST without a valid one before any endpoint, lane selection or
 * buffer exists for the peer. The key itself never travels.
 *
 * <pre>
 *  proof = | nonce:16 (SecureRandom) | time:u64 (ms since the epoch) | HMAC-SHA256:32 |
 *  REQUEST:     HMAC over "nucx-wireup-1" | sender uuid:u64 | receiver uuid:u64 | conn sn:u16 | nonce | time
 *  LANE_ATTACH: HMAC over "nucx-lane-1" | sender uuid:u64 | receiver uuid:u64 | sender ep:u64 | receiver ep:u64 |
 *               lane:u8 | nonce | time
 * </pre>
 * LANE_ATTACH (a lane joining a wired-up endpoint) carries a proof too: endpoint ids count from 0 and uuids are in
 * addresses, so without it anyone who reaches the port could attach a lane to another peer's endpoint.
 * Both worker uuids are in the MAC, so a REQUEST recorded on its way to one worker proves nothing to another, nor
 * for another sender; the time must lie within {@link #WINDOW_MILLIS} of the receiver's clock, and a nonce seen
 * within that window is refused (a replay), so the nonces a worker remembers are bounded by the window.
 */
final class WireupAuth {

    static final int NONCE_LENGTH = 16;
    static final int MAC_LENGTH = 32;
    static final int PROOF_LENGTH = NONCE_LENGTH + 8 + MAC_LENGTH;
    /** How far a REQUEST's time may be from ours (hosts' clocks must agree this well). */
    static final long WINDOW_MILLIS = 5 * 60_000;
    private static final byte[] LABEL = "nucx-wireup-1".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] LANE_LABEL = "nucx-lane-1".getBytes(StandardCharsets.US_ASCII);
    private static final int MIN_KEY = 16;

    private final SecretKeySpec key;
    private final String source;
    private final LongSupplier clock;
    private final SecureRandom random = new SecureRandom();
    /** Nonces seen within the window, and when each expires, oldest first. Loop only. */
    private final Set<ByteBuffer> seen = new HashSet<>();
    private final ArrayDeque<Object[]> expiries = new ArrayDeque<>();

    private WireupAuth(byte[] key, String source, LongSupplier clock) {
        this.key = new SecretKeySpec(key, "HmacSHA256");
        this.source = source;
        this.clock = clock;
    }

    /** The key {@code config} names, or null when wireup is not authenticated. */
    static WireupAuth from(NucxConfig config) {
        String token = config.get(WireupConfig.AUTH_TOKEN);
        String file = config.get(WireupConfig.AUTH_KEY_FILE).trim();
        if (!token.isEmpty() && !file.isEmpty()) {
            throw config.invalid(WireupConfig.AUTH_KEY_FILE, "give NUCX_AUTH_TOKEN or NUCX_AUTH_KEY_FILE, not both");
        }
        if (!token.isEmpty()) {
            byte[] k = token.getBytes(StandardCharsets.UTF_8);
            if (k.length < MIN_KEY) {
                throw config.invalid(WireupConfig.AUTH_TOKEN, "at least " + MIN_KEY + " bytes");
            }
            return new WireupAuth(k, "NUCX_AUTH_TOKEN", System::currentTimeMillis);
        }
        if (!file.isEmpty()) {
            byte[] k;
            try {
                k = Files.readAllBytes(Path.of(file));
            } catch (IOException e) {
                throw config.invalid(WireupConfig.AUTH_KEY_FILE, "cannot read it: " + e);
            }
            if (k.length < MIN_KEY) {
                throw config.invalid(WireupConfig.AUTH_KEY_FILE, "the key file holds " + k.length + " bytes, at least "
                        + MIN_KEY + " needed");
            }
            return new WireupAuth(k, "NUCX_AUTH_KEY_FILE", System::currentTimeMillis);
        }
        return null;
    }

    /** A fresh proof for a REQUEST from {@code sender} to {@code receiver} as connection {@code connSn}. */
    byte[] proof(long sender, long receiver, int connSn) {
        return proof(LABEL, requestFields(sender, receiver, connSn));
    }

    /** A fresh proof for a LANE_ATTACH of lane {@code lane} from endpoint {@code senderEp} to {@code receiverEp}. */
    byte[] laneProof(long sender, long receiver, long senderEp, long receiverEp, int lane) {
        return proof(LANE_LABEL, laneFields(sender, receiver, senderEp, receiverEp, lane));
    }

    private byte[] proof(byte[] label, byte[] fields) {
        byte[] nonce = new byte[NONCE_LENGTH];
        synchronized (random) {
            random.nextBytes(nonce);
        }
        long time = clock.getAsLong();
        return ByteBuffer.allocate(PROOF_LENGTH).order(ByteOrder.LITTLE_ENDIAN).put(nonce).putLong(time)
                .put(mac(label, fields, nonce, time)).array();
    }

    private static byte[] requestFields(long sender, long receiver, int connSn) {
        return ByteBuffer.allocate(18).order(ByteOrder.LITTLE_ENDIAN).putLong(sender).putLong(receiver)
                .putShort((short) connSn).array();
    }

    private static byte[] laneFields(long sender, long receiver, long senderEp, long receiverEp, int lane) {
        return ByteBuffer.allocate(33).order(ByteOrder.LITTLE_ENDIAN).putLong(sender).putLong(receiver)
                .putLong(senderEp).putLong(receiverEp).put((byte) lane).array();
    }

    /** Checks a LANE_ATTACH's proof, as {@link #check} a REQUEST's. */
    void checkLane(byte[] proof, long sender, long receiver, long senderEp, long receiverEp, int lane) {
        check(proof, LANE_LABEL, laneFields(sender, receiver, senderEp, receiverEp, lane),
                "LANE_ATTACH from " + Long.toHexString(sender));
    }

    /**
     * Checks the proof of a REQUEST from {@code sender} (its claim) to us, {@code receiver}. Loop only.
     *
     * @throws ProtocolException naming what is wrong: no proof, a bad MAC, a stale time, a replayed nonce
     */
    void check(byte[] proof, long sender, long receiver, int connSn) {
        check(proof, LABEL, requestFields(sender, receiver, connSn), "wireup REQUEST from "
                + Long.toHexString(sender));
    }

    private void check(byte[] proof, byte[] label, byte[] fields, String what) {
        String who = what + " refused (" + source + "): ";
        if (proof == null) {
            throw new ProtocolException(who + "it carries no proof of the key");
        }
        ByteBuffer p = ByteBuffer.wrap(proof).order(ByteOrder.LITTLE_ENDIAN);
        byte[] nonce = new byte[NONCE_LENGTH];
        p.get(nonce);
        long time = p.getLong();
        byte[] mac = new byte[MAC_LENGTH];
        p.get(mac);
        if (!MessageDigest.isEqual(mac, mac(label, fields, nonce, time))) {
            throw new ProtocolException(who + "its proof does not match (another key, or another sender or "
                    + "receiver)");
        }
        long now = clock.getAsLong();
        if (Math.abs(now - time) > WINDOW_MILLIS) {
            throw new ProtocolException(who + "its proof is " + (now - time) + " ms old (at most " + WINDOW_MILLIS
                    + "; are the hosts' clocks apart?)");
        }
        forgetExpired(now);
        if (!seen.add(ByteBuffer.wrap(nonce))) {
            throw new ProtocolException(who + "it replays a message already received");
        }
        expiries.add(new Object[] {time + WINDOW_MILLIS, ByteBuffer.wrap(nonce)});
    }

    private void forgetExpired(long now) {
        for (Object[] e; (e = expiries.peek()) != null && (long) e[0] < now - WINDOW_MILLIS; ) {
            expiries.poll();
            seen.remove((ByteBuffer) e[1]);
        }
    }

    private byte[] mac(byte[] label, byte[] fields, byte[] nonce, long time) {
        try {
            Mac m = Mac.getInstance("HmacSHA256");
            m.init(key);
            m.update(label);
            m.update(fields);
            m.update(nonce);
            m.update(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(time).array());
            return m.doFinal();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is part of every JDK", e);
        }
    }
}
