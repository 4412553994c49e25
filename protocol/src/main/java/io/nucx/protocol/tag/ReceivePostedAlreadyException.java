package io.nucx.protocol.tag;

/**
 * A {@linkplain TagReceive#reusable reusable} receive posted again while it is still posted. The first post stands:
 * the second is refused and changes nothing.
 */
public final class ReceivePostedAlreadyException extends IllegalStateException {

    public ReceivePostedAlreadyException(String message) {
        super(message);
    }
}
