package io.nucx.protocol.tag;

import java.util.Locale;

/**
 * Which data protocol a rendezvous receiver asks for ({@code NUCX_RNDV_SCHEME}, UCX's {@code UCX_RNDV_SCHEME}). The
 * receiver decides when the RTS arrives; the sender's tables only say which RTS to send (with its key for get, plain
 * otherwise), so each scheme also leaves out the protocols it never uses.
 */
public enum RndvScheme {
    /** Read the sender's memory when it offered a key and our RMA lane permits ({@code rndv/get/zcopy}), else RTR. */
    AUTO,
    /** As {@link #AUTO}; {@code rndv/put/zcopy} stays out of the tables. */
    GET_ZCOPY,
    /**
     * Offer the receive buffer's key in the RTR so the sender writes into it ({@code rndv/put/zcopy}) when the buffer
     * is one run of native memory and we have a permitted RMA lane with PUT_ZCOPY; else a plain RTR.
     */
    PUT_ZCOPY,
    /** Always a plain RTR: the data come as RNDV_DATA active messages. */
    AM;

    /** The configuration spelling: auto, get_zcopy, put_zcopy, am. */
    public String configName() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** Parses a validated NUCX_RNDV_SCHEME value (any case). */
    public static RndvScheme parse(String value) {
        return valueOf(value.trim().toUpperCase(Locale.ROOT));
    }
}
