package io.nucx.protocol;

/**
 * Active-message ids, numbered as UCP's ({@code src/ucp/core/ucp_types.h}) so that a frame dump reads like UCX's.
 * Id 0 is reserved: the tcp framing rejects it.
 */
public final class AmIds {
    /** Wireup messages (REQUEST, REPLY, ACK, ...). */
    public static final int WIREUP = 1;
    /** A whole tagged message in one frame: {@code tag:u64} + payload. */
    public static final int EAGER_ONLY = 2;
    /** First fragment: {@code tag:u64, total length:u64, message id:u64} + payload. */
    public static final int EAGER_FIRST = 3;
    /** Later fragment: {@code message id:u64, offset:u64} + payload. */
    public static final int EAGER_MIDDLE = 4;

    private AmIds() {
    }

    /** A name for logs and errors. */
    public static String name(int amId) {
        return switch (amId) {
            case WIREUP -> "WIREUP";
            case EAGER_ONLY -> "EAGER_ONLY";
            case EAGER_FIRST -> "EAGER_FIRST";
            case EAGER_MIDDLE -> "EAGER_MIDDLE";
            default -> "AM#" + amId;
        };
    }
}
