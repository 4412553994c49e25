package io.nucx.transport.tcp;

/**
 * The byte layout of an active-message frame on a byte stream (tcp). All fields little-endian, as UCX's.
 *
 * <pre>
 *  0        1        2                 4                                  8
 *  +--------+--------+-----------------+----------------------------------+
 *  | am id  | flags  | header length   |          payload length          |
 *  |  u8    |  u8    |      u16        |               u32                |
 *  +--------+--------+-----------------+----------------------------------+
 *  | header (header length bytes)      | payload (payload length bytes)  ...
 *  +-----------------------------------+--------------------------------------
 * </pre>
 * Both lengths are checked against the iface's limits before a byte of the body is buffered.
 */
public final class AmFrameLayout {

    /** Offset of the active-message id. */
    public static final int AM_ID_OFFSET = 0;
    /** Offset of the flags byte. */
    public static final int FLAGS_OFFSET = 1;
    /** Offset of the u16 header length. */
    public static final int HEADER_LENGTH_OFFSET = 2;
    /** Offset of the u32 payload length. */
    public static final int PAYLOAD_LENGTH_OFFSET = 4;
    /** Length of the fixed frame prefix. */
    public static final int PREFIX_LENGTH = 8;

    private AmFrameLayout() {
    }
}
