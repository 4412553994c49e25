package io.nucx.protocol.amo;

/** The peer refused an atomic: what was asked, and why. The endpoint is fine; only this operation failed. */
public final class RemoteAccessException extends RuntimeException {

    public RemoteAccessException(String message) {
        super(message);
    }
}
