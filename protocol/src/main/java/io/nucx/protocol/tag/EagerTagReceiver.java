package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.ProtocolException;
import io.nucx.transport.AmFrame;

/**
 * The receive side of the eager protocols: parses EAGER_ONLY / FIRST / MIDDLE headers and their synchronous and
 * zero-copy variants ({@link EagerHeaders}) and hands the payload to the {@link TagMatcher}; acknowledgements go to
 * the waiting sends ({@link SyncSends}, {@link ZcopySends}). A header of the wrong length, a negative request id or an
 * acknowledgement nobody waits for is a protocol error.
 */
public final class EagerTagReceiver {

    private final TagMatcher matcher;
    private final SyncSends syncSends;
    private final ZcopySends zcopySends;

    public EagerTagReceiver(TagMatcher matcher) {
        this(matcher, null, null);
    }

    /** @param syncSends where EAGER_SYNC_ACKs for this worker's synchronous sends go; null if it sends none */
    public EagerTagReceiver(TagMatcher matcher, SyncSends syncSends) {
        this(matcher, syncSends, null);
    }

    /**
     * @param syncSends  where EAGER_SYNC_ACKs for this worker's synchronous sends go; null if it sends none
     * @param zcopySends where EAGER_ZCOPY_ACKs for this worker's zero-copy sends go; null if it sends none
     */
    public EagerTagReceiver(TagMatcher matcher, SyncSends syncSends, ZcopySends zcopySends) {
        this.matcher = matcher;
        this.syncSends = syncSends;
        this.zcopySends = zcopySends;
    }

    /** Handles one eager frame that arrived for the endpoint {@code source}; releases the frame. */
    public void onFrame(Channel source, AmFrame frame) {
        try {
            ByteBuf h = frame.header();
            int at = h.readerIndex();
            switch (frame.amId()) {
                case AmIds.EAGER_ONLY -> {
                    check(frame, EagerHeaders.ONLY_LENGTH);
                    matcher.onEagerOnly(source, h.getLongLE(at + EagerHeaders.TAG_OFFSET), frame.payload().retain());
                }
                case AmIds.EAGER_FIRST -> {
                    check(frame, EagerHeaders.FIRST_LENGTH);
                    matcher.onEagerFirst(source, h.getLongLE(at + EagerHeaders.TAG_OFFSET),
                            h.getLongLE(at + EagerHeaders.FIRST_TOTAL_OFFSET),
                            h.getLongLE(at + EagerHeaders.FIRST_MSG_ID_OFFSET), frame.payload().retain());
                }
                case AmIds.EAGER_SYNC_ONLY -> {
                    check(frame, EagerHeaders.SYNC_ONLY_LENGTH);
                    long reqId = nonNegative(frame, h.getLongLE(at + EagerHeaders.ONLY_LENGTH));
                    matcher.onEagerOnly(source, h.getLongLE(at + EagerHeaders.TAG_OFFSET), reqId,
                            frame.payload().retain());
                }
                case AmIds.EAGER_SYNC_FIRST -> {
                    check(frame, EagerHeaders.SYNC_FIRST_LENGTH);
                    long reqId = nonNegative(frame, h.getLongLE(at + EagerHeaders.FIRST_LENGTH));
                    matcher.onEagerFirst(source, h.getLongLE(at + EagerHeaders.TAG_OFFSET),
                            h.getLongLE(at + EagerHeaders.FIRST_TOTAL_OFFSET),
                            h.getLongLE(at + EagerHeaders.FIRST_MSG_ID_OFFSET), reqId, frame.payload().retain());
                }
                case AmIds.EAGER_SYNC_ACK -> {
                    check(frame, EagerHeaders.SYNC_ACK_LENGTH);
                    if (syncSends == null) {
                        throw new ProtocolException("EAGER_SYNC_ACK, but this worker sends no synchronous messages");
                    }
                    syncSends.onAck(source, h.getLongLE(at), h.getByte(at + 8));
                }
                case AmIds.EAGER_ZCOPY_ONLY -> {
                    check(frame, EagerHeaders.ZCOPY_ONLY_LENGTH);
                    long reqId = nonNegative(frame, h.getLongLE(at + EagerHeaders.ONLY_LENGTH));
                    matcher.onEagerZcopyOnly(source, h.getLongLE(at + EagerHeaders.TAG_OFFSET), reqId,
                            frame.payload().retain());
                }
                case AmIds.EAGER_ZCOPY_FIRST -> {
                    check(frame, EagerHeaders.ZCOPY_FIRST_LENGTH);
                    long reqId = nonNegative(frame, h.getLongLE(at + EagerHeaders.FIRST_LENGTH));
                    matcher.onEagerZcopyFirst(source, h.getLongLE(at + EagerHeaders.TAG_OFFSET),
                            h.getLongLE(at + EagerHeaders.FIRST_TOTAL_OFFSET),
                            h.getLongLE(at + EagerHeaders.FIRST_MSG_ID_OFFSET), reqId, frame.payload().retain());
                }
                case AmIds.EAGER_ZCOPY_ACK -> {
                    check(frame, EagerHeaders.ZCOPY_ACK_LENGTH);
                    if (zcopySends == null) {
                        throw new ProtocolException("EAGER_ZCOPY_ACK, but this worker sends no zero-copy messages");
                    }
                    zcopySends.onAck(source, h.getLongLE(at));
                }
                case AmIds.EAGER_MIDDLE -> {
                    check(frame, EagerHeaders.MIDDLE_LENGTH);
                    matcher.onEagerMiddle(source, h.getLongLE(at + EagerHeaders.MIDDLE_MSG_ID_OFFSET),
                            h.getLongLE(at + EagerHeaders.MIDDLE_OFFSET_OFFSET), frame.payload().retain());
                }
                default -> throw new ProtocolException("not an eager frame: " + AmIds.name(frame.amId()));
            }
        } finally {
            frame.release();
        }
    }

    private static long nonNegative(AmFrame frame, long reqId) {
        if (reqId < 0) {
            throw new ProtocolException(AmIds.name(frame.amId()) + " with request id " + reqId);
        }
        return reqId;
    }

    private static void check(AmFrame frame, int headerLength) {
        if (frame.header().readableBytes() != headerLength) {
            throw new ProtocolException(AmIds.name(frame.amId()) + " header is " + frame.header().readableBytes()
                    + " bytes, expected " + headerLength);
        }
    }
}
