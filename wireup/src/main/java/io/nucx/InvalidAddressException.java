package io.nucx;

/** A worker address blob that cannot be decoded; the message says which field was wrong and where. */
public final class InvalidAddressException extends IllegalArgumentException {
    public InvalidAddressException(String message) {
        super(message);
    }
}
