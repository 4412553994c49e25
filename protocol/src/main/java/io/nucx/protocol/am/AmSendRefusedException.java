package io.nucx.protocol.am;

/**
 * An active message refused before anything was sent: its id or its header is outside what the protocol carries.
 * Only that send fails; written with the endpoint's void promise, it reaches the pipeline's exception handlers as any
 * failed user write does, and the endpoint goes on (it is not a peer's fault).
 */
public final class AmSendRefusedException extends IllegalArgumentException {

    public AmSendRefusedException(String message) {
        super(message);
    }
}
