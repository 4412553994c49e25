package io.nucx.examples.frameworks;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;

import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.SplittableRandom;

/** Request and response bodies whose content is derived from a seed, and their SHA-256, so each side can check. */
public final class Bodies {

    private Bodies() {
    }

    /** {@code length} bytes derived from {@code seed}. */
    public static byte[] of(long seed, int length) {
        byte[] b = new byte[length];
        new SplittableRandom(seed).nextBytes(b);
        return b;
    }

    public static String sha256(byte[] data) {
        return sha256(data, 0, data.length);
    }

    public static String sha256(byte[] data, int offset, int length) {
        MessageDigest d = digest();
        d.update(data, offset, length);
        return HexFormat.of().formatHex(d.digest());
    }

    /** The SHA-256 of {@code buf}'s readable bytes, read without moving its indexes. */
    public static String sha256(ByteBuf buf) {
        MessageDigest d = digest();
        if (buf.nioBufferCount() > 0) {
            for (ByteBuffer b : buf.nioBuffers()) {
                d.update(b);
            }
        } else {
            d.update(ByteBufUtil.getBytes(buf));
        }
        return HexFormat.of().formatHex(d.digest());
    }

    private static MessageDigest digest() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
