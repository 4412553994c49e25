package io.nucx.protocol.tag;

import io.nucx.protocol.AmIds;
import io.nucx.protocol.select.SelectionKey;

/**
 * What a message carried by the eager and rendezvous codecs is, which decides only its first frame's id (and so where
 * the receiver puts it) and the selection key it is sent with: a tagged message (matched), a stream write (the
 * endpoint's stream) or an active message (the worker's handler for its id). Fragments, acknowledgements and the
 * rendezvous RTR / DATA / ATS / ATP are shared by all three: they name a message or request id, not a destination.
 */
public enum MessageKind {
    TAG(AmIds.EAGER_ONLY, AmIds.EAGER_FIRST, AmIds.EAGER_ZCOPY_ONLY, AmIds.EAGER_ZCOPY_FIRST, AmIds.RNDV_RTS,
            SelectionKey.Operation.TAG_SEND),
    STREAM(AmIds.STREAM_ONLY, AmIds.STREAM_FIRST, AmIds.STREAM_ZCOPY_ONLY, AmIds.STREAM_ZCOPY_FIRST,
            AmIds.STREAM_RTS, SelectionKey.Operation.STREAM_SEND),
    AM(AmIds.AM_ONLY, AmIds.AM_FIRST, AmIds.AM_ZCOPY_ONLY, AmIds.AM_ZCOPY_FIRST, AmIds.AM_RTS,
            SelectionKey.Operation.AM_SEND);

    private final int onlyId;
    private final int firstId;
    private final int zcopyOnlyId;
    private final int zcopyFirstId;
    private final int rtsId;
    private final SelectionKey.Operation operation;

    MessageKind(int onlyId, int firstId, int zcopyOnlyId, int zcopyFirstId, int rtsId,
                SelectionKey.Operation operation) {
        this.onlyId = onlyId;
        this.firstId = firstId;
        this.zcopyOnlyId = zcopyOnlyId;
        this.zcopyFirstId = zcopyFirstId;
        this.rtsId = rtsId;
        this.operation = operation;
    }

    /** A whole message in one frame (EAGER_ONLY's layout). */
    public int onlyId() {
        return onlyId;
    }

    /** The first fragment of a copied message (EAGER_FIRST's layout). */
    public int firstId() {
        return firstId;
    }

    /** A whole message from the sender's buffer (EAGER_ZCOPY_ONLY's layout). */
    public int zcopyOnlyId() {
        return zcopyOnlyId;
    }

    /** The first fragment of a zero-copy message (EAGER_ZCOPY_FIRST's layout). */
    public int zcopyFirstId() {
        return zcopyFirstId;
    }

    /** The rendezvous request (RNDV_RTS's layout). */
    public int rtsId() {
        return rtsId;
    }

    /** The selection key's operation: which protocol table its sends look up. */
    public SelectionKey.Operation operation() {
        return operation;
    }
}
