package io.nucx;

/** No lane reaches the peer (UCS_ERR_UNREACHABLE); the message lists each candidate and why it lost. */
public final class UnreachableException extends RuntimeException {
    public UnreachableException(String message) {
        super(message);
    }
}
