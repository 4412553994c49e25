package io.nucx.protocol.am;

import java.io.IOException;

/**
 * A rendezvous active message was refused: the receiving worker has no handler for its id (UCX's RTS answered by ATS
 * with {@code UCS_ERR_INVALID_PARAM}). An eager one is dropped at the receiver instead, as UCX does; the sender cannot
 * tell.
 */
public final class NoAmHandlerException extends IOException {

    public NoAmHandlerException(String message) {
        super(message);
    }
}
