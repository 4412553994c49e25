package io.nucx.transport.rma;

/**
 * A packed remote key this lane cannot use ({@link RmaLane#unpackKey}): not this transport's format or length, or
 * naming memory of someone other than the lane's peer. The message says which.
 */
public final class InvalidRemoteKeyException extends Exception {
    private static final long serialVersionUID = 1L;

    public InvalidRemoteKeyException(String message) {
        super(message);
    }
}
