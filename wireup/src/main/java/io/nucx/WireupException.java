package io.nucx;

/** An endpoint could not be wired up; the message names the peer and the lane. */
public final class WireupException extends RuntimeException {
    public WireupException(String message, Throwable cause) {
        super(message, cause);
    }
}
