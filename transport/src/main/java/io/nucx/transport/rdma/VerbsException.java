package io.nucx.transport.rdma;

import io.nucx.transport.rma.RmaException;

/**
 * A verb that failed, named with its errno, or a work completion that failed, named with its status (an
 * {@link RmaException}: a failed GET, PUT or atomic fails with it).
 */
public final class VerbsException extends RmaException {

    private static final long serialVersionUID = 1L;
    private final int errno;

    VerbsException(String call, int errno) {
        super(call + " failed: " + Verbs.errnoName(errno));
        this.errno = errno;
    }

    VerbsException(String message) {
        super(message);
        this.errno = 0;
    }

    /** The errno the verb reported (0 for a failed completion, whose status is in the message). */
    public int errno() {
        return errno;
    }
}
