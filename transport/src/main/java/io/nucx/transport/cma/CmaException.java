package io.nucx.transport.cma;

import io.nucx.transport.rma.RmaException;

/** A cross-memory-attach call failed; the message names the call, the peer, both ranges and errno. */
public final class CmaException extends RmaException {
    private static final long serialVersionUID = 1L;
    private final int errno;

    CmaException(String message, int errno) {
        super(message);
        this.errno = errno;
    }

    /** The C errno the call failed with. */
    public int errno() {
        return errno;
    }
}
