package io.nucx.transport.rma;

import java.io.IOException;

/** An RMA operation failed in the transport; the message names the call, the peer and the error. */
public class RmaException extends IOException {
    private static final long serialVersionUID = 1L;

    public RmaException(String message) {
        super(message);
    }
}
