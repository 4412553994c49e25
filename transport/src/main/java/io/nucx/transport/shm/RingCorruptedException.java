package io.nucx.transport.shm;

/** A ring's shared words hold values no correct producer writes; the connection using it must be closed. */
public final class RingCorruptedException extends IllegalStateException {
    public RingCorruptedException(String message) {
        super(message);
    }
}
