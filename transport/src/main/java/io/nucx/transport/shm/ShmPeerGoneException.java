package io.nucx.transport.shm;

import java.nio.channels.ClosedChannelException;

/** The other end of a shm connection closed or its process died; names the peer. */
public final class ShmPeerGoneException extends ClosedChannelException {
    private static final long serialVersionUID = 1L;
    private final String message;

    public ShmPeerGoneException(String message) {
        this.message = message;
    }

    @Override
    public String getMessage() {
        return message;
    }
}
