package io.nucx.protocol.am;

import io.nucx.protocol.ProtocolException;

/**
 * The 64-bit tag field of an active message's first frame (AM_ONLY, AM_FIRST, AM_ZCOPY_*, AM_RTS), where a tagged
 * message has its tag:
 * <pre>
 *  bits  0..15  AM id            (the handler's id at the receiver)
 *  bits 16..23  flags            ({@link #FLAG_REPLY}: the sender asks for a reply endpoint)
 *  bits 24..31  0
 *  bits 32..63  user header length, bytes (at most {@link #MAX_HEADER})
 * </pre>
 * An eager payload is the user header followed by the data; an AM_RTS's payload is the user header alone.
 */
public final class AmHeaders {

    /** The largest AM id (UCX's are 16 bits too). */
    public static final int MAX_ID = 0xffff;
    /** The largest user header, bytes: it must fit one frame next to an RTS header and a remote key on every lane. */
    public static final int MAX_HEADER = 4096;
    /** The sender asks for a reply endpoint (UCX's {@code UCP_AM_SEND_FLAG_REPLY}). */
    public static final int FLAG_REPLY = 1;

    private AmHeaders() {
    }

    public static long pack(int id, int flags, int headerLength) {
        return (id & 0xffffL) | ((flags & 0xffL) << 16) | ((long) headerLength << 32);
    }

    public static int id(long tagField) {
        return (int) (tagField & 0xffff);
    }

    public static int flags(long tagField) {
        return (int) ((tagField >>> 16) & 0xff);
    }

    /**
     * The user header's length.
     *
     * @throws ProtocolException when it is over {@link #MAX_HEADER} or bits that must be 0 are not
     */
    public static int headerLength(long tagField) {
        long n = tagField >>> 32;
        if (n > MAX_HEADER || (tagField & 0xff000000L) != 0 || (flags(tagField) & ~FLAG_REPLY) != 0) {
            throw new ProtocolException("active message tag field 0x" + Long.toHexString(tagField) + ": header length "
                    + n + " (at most " + MAX_HEADER + ") or unknown flags");
        }
        return (int) n;
    }
}
