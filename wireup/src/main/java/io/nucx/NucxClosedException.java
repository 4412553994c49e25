package io.nucx;

import java.nio.channels.ClosedChannelException;

/**
 * An operation on an endpoint, a channel or a worker that was closed: a {@link ClosedChannelException}, as Netty code
 * expects, whose message says what was closed and how (its cause is the failure that closed it, if one did), instead
 * of Netty's message-less one.
 */
public final class NucxClosedException extends ClosedChannelException {

    private final String message;

    public NucxClosedException(String message, Throwable cause) {
        this.message = message;
        if (cause != null) {
            initCause(cause);
        }
    }

    @Override
    public String getMessage() {
        return message;
    }
}
