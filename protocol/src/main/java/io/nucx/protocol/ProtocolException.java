package io.nucx.protocol;

/** A peer broke the protocol (unknown message id, impossible length...); the lane it came on is closed. */
public final class ProtocolException extends RuntimeException {
    public ProtocolException(String message) {
        super(message);
    }
}
