package io.nucx.protocol.amo;

/**
 * Layouts of the two atomic messages (little-endian), UCX's software atomics over active messages:
 * <pre>
 *  ATOMIC_REQ  | request id:u64 | address:u64 | value:u64 | compare:u64 | region:u32 | op:u8 | pad:u8[3] |
 *              | secret:u64 |                                                                                     48 B
 *  ATOMIC_REP  | request id:u64 | status:u8 | old value:u64 |                                                  17 B
 * </pre>
 */
public final class AmoHeaders {

    public static final int REQ_LENGTH = 48;
    public static final int REP_LENGTH = 17;

    public static final int STATUS_OK = 0;
    public static final int STATUS_NO_REGION = 1;
    public static final int STATUS_OUT_OF_BOUNDS = 2;
    public static final int STATUS_MISALIGNED = 3;
    public static final int STATUS_UNKNOWN_OP = 4;
    public static final int STATUS_INACCESSIBLE = 5;

    private AmoHeaders() {
    }

    static String statusText(int status) {
        return switch (status) {
            case STATUS_NO_REGION -> "no such registered region (never registered, unregistered, or the key's secret "
                    + "is not the region's)";
            case STATUS_OUT_OF_BOUNDS -> "the 8-byte word is outside the registered region";
            case STATUS_MISALIGNED -> "the address is not 8-byte aligned";
            case STATUS_UNKNOWN_OP -> "the peer does not know this atomic operation";
            case STATUS_INACCESSIBLE -> "the region's memory was freed, or is confined to another thread";
            default -> "status " + status;
        };
    }
}
