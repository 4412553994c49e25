package io.nucx.protocol;

/**
 * Active-message ids, numbered as UCP's ({@code src/ucp/core/ucp_types.h}) so that a frame dump reads like UCX's.
 * Id 0 is reserved: the tcp framing rejects it. Id 255 is the tcp transport's own (TcpIface.CONNECT_EP_AM_ID, the first
 * frame of a p2p connection).
 */
public final class AmIds {
    /** Wireup messages (REQUEST, REPLY, ACK, ...). */
    public static final int WIREUP = 1;
    /** A whole tagged message in one frame: {@code tag:u64} + payload. */
    public static final int EAGER_ONLY = 2;
    /** First fragment: {@code tag:u64, total length:u64, message id:u64} + payload. */
    public static final int EAGER_FIRST = 3;
    /** Later fragment: {@code message id:u64, offset:u64} + payload. */
    public static final int EAGER_MIDDLE = 4;
    /** A whole synchronous message: {@code tag:u64, sender request id:u64} + payload. */
    public static final int EAGER_SYNC_ONLY = 6;
    /** First fragment of a synchronous message: {@code tag, total length, message id, sender request id} (u64). */
    public static final int EAGER_SYNC_FIRST = 7;
    /** The receiver matched a synchronous message: {@code sender request id:u64, status:i8}. */
    public static final int EAGER_SYNC_ACK = 8;
    /** Rendezvous request to send: {@code tag:u64, sender request id:u64, size:u64}. */
    public static final int RNDV_RTS = 9;
    /** Rendezvous acknowledgement to the sender: {@code sender request id:u64, status:i8}. */
    public static final int RNDV_ATS = 10;
    /** Ready to receive: {@code sender request id:u64, receiver request id:u64, size:u64}. */
    public static final int RNDV_RTR = 11;
    /** Rendezvous data: {@code receiver request id:u64, offset:u64} + payload. */
    public static final int RNDV_DATA = 12;
    /**
     * Rendezvous "ack to put": the sender has written the message into the receive buffer offered in the RTR
     * ({@code rndv/put/zcopy}) and will not write it again: {@code receiver request id:u64, status:i8, size:u64}.
     */
    public static final int RNDV_ATP = 16;
    /** An atomic on registered memory: {@code request id, address, value, compare (u64), region:u32, op:u8, 3 pad}. */
    public static final int ATOMIC_REQ = 20;
    /** Its result: {@code request id:u64, status:u8, previous value:u64}. */
    public static final int ATOMIC_REP = 21;
    /**
     * A whole message sent from the sender's buffer ({@code egr/single/zcopy}): {@code tag:u64, sender request id:u64}
     * + payload. The receiver answers EAGER_ZCOPY_ACK when it has the message (arrival, not match).
     */
    public static final int EAGER_ZCOPY_ONLY = 24;
    /**
     * First fragment of a zero-copy message ({@code egr/multi/zcopy}): {@code tag, total length, message id, sender
     * request id} (u64); EAGER_MIDDLE fragments follow. Acknowledged once every byte has arrived.
     */
    public static final int EAGER_ZCOPY_FIRST = 25;
    /** The receiver has the whole zero-copy message: {@code sender request id:u64}. */
    public static final int EAGER_ZCOPY_ACK = 26;

    /**
     * Stream data (UCX's {@code ucp_stream_send_nbx}), one id per first frame of the carrying protocol, each with the
     * layout of its tagged counterpart and the tag field unused (0): a whole write in one frame (EAGER_ONLY's).
     * EAGER_MIDDLE fragments, EAGER_ZCOPY_ACK and the rendezvous RTR / DATA / ATS / ATP are shared with tagged
     * messages: they name a message or request id, not a destination. Own ids keep stream bytes away from tag
     * matching; see {@code io.nucx.protocol.stream.StreamCodec}.
     */
    public static final int STREAM_ONLY = 40;
    /** First fragment of a stream write (EAGER_FIRST's layout). */
    public static final int STREAM_FIRST = 41;
    /** A whole stream write from the sender's buffer (EAGER_ZCOPY_ONLY's layout). */
    public static final int STREAM_ZCOPY_ONLY = 42;
    /** First fragment of a zero-copy stream write (EAGER_ZCOPY_FIRST's layout). */
    public static final int STREAM_ZCOPY_FIRST = 43;
    /** Rendezvous request to send a stream write (RNDV_RTS's layout, key included). */
    public static final int STREAM_RTS = 44;
    /** The receiver consumed stream bytes: {@code bytes:u64} more may be sent. */
    public static final int STREAM_CREDIT = 45;
    /** End of the sender's stream (its output shut down), behind every byte it wrote: no header, no payload. */
    public static final int STREAM_FIN = 46;
    /**
     * The receiver delivered the sender's STREAM_FIN (every byte before it too): {@code bytes:u64}, the last credit (0
     * or more). A graceful close of the sender waits for it, so the peer sees the end before the endpoint goes.
     */
    public static final int STREAM_FIN_ACK = 47;

    /**
     * Active messages of the user (UCX's {@code ucp_am_send_nbx}), one id per first frame of the carrying protocol,
     * each with the layout of its tagged counterpart; the tag field holds the message's AM id, flags and user-header
     * length ({@code io.nucx.protocol.am.AmHeaders}). An eager payload is the user header followed by the data; an
     * AM_RTS carries the user header as its payload. Fragments, acknowledgements and rendezvous RTR / DATA / ATS / ATP
     * are the tagged ones. Own ids keep active messages away from tag matching; see
     * {@code io.nucx.protocol.am.AmCodec}.
     */
    public static final int AM_ONLY = 50;
    /** First fragment of an active message (EAGER_FIRST's layout). */
    public static final int AM_FIRST = 51;
    /** A whole active message from the sender's buffer (EAGER_ZCOPY_ONLY's layout). */
    public static final int AM_ZCOPY_ONLY = 52;
    /** First fragment of a zero-copy active message (EAGER_ZCOPY_FIRST's layout). */
    public static final int AM_ZCOPY_FIRST = 53;
    /** Rendezvous request to send an active message (RNDV_RTS's layout, key included) + the user header. */
    public static final int AM_RTS = 54;

    private AmIds() {
    }

    /** A name for logs and errors. */
    public static String name(int amId) {
        return switch (amId) {
            case WIREUP -> "WIREUP";
            case EAGER_ONLY -> "EAGER_ONLY";
            case EAGER_FIRST -> "EAGER_FIRST";
            case EAGER_MIDDLE -> "EAGER_MIDDLE";
            case EAGER_SYNC_ONLY -> "EAGER_SYNC_ONLY";
            case EAGER_SYNC_FIRST -> "EAGER_SYNC_FIRST";
            case EAGER_SYNC_ACK -> "EAGER_SYNC_ACK";
            case RNDV_RTS -> "RNDV_RTS";
            case RNDV_ATS -> "RNDV_ATS";
            case RNDV_RTR -> "RNDV_RTR";
            case RNDV_DATA -> "RNDV_DATA";
            case RNDV_ATP -> "RNDV_ATP";
            case ATOMIC_REQ -> "ATOMIC_REQ";
            case ATOMIC_REP -> "ATOMIC_REP";
            case EAGER_ZCOPY_ONLY -> "EAGER_ZCOPY_ONLY";
            case EAGER_ZCOPY_FIRST -> "EAGER_ZCOPY_FIRST";
            case EAGER_ZCOPY_ACK -> "EAGER_ZCOPY_ACK";
            case STREAM_ONLY -> "STREAM_ONLY";
            case STREAM_FIRST -> "STREAM_FIRST";
            case STREAM_ZCOPY_ONLY -> "STREAM_ZCOPY_ONLY";
            case STREAM_ZCOPY_FIRST -> "STREAM_ZCOPY_FIRST";
            case STREAM_RTS -> "STREAM_RTS";
            case STREAM_CREDIT -> "STREAM_CREDIT";
            case STREAM_FIN -> "STREAM_FIN";
            case STREAM_FIN_ACK -> "STREAM_FIN_ACK";
            case AM_ONLY -> "AM_ONLY";
            case AM_FIRST -> "AM_FIRST";
            case AM_ZCOPY_ONLY -> "AM_ZCOPY_ONLY";
            case AM_ZCOPY_FIRST -> "AM_ZCOPY_FIRST";
            case AM_RTS -> "AM_RTS";
            default -> "AM#" + amId;
        };
    }
}
