package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.ProtocolException;
import io.nucx.transport.AmFrame;

/**
 * Parses arriving rendezvous frames ({@link RndvHeaders}): RTS (with or without a remote key), DATA and ATP go to the
 * receive side ({@link TagMatcher}), RTR (with or without a remote key) and ATS to the send side ({@link RndvSends}).
 * A header of the wrong length is a protocol error.
 */
public final class RndvReceiver {

    private final TagMatcher matcher;
    private final RndvSends sends;

    public RndvReceiver(TagMatcher matcher, RndvSends sends) {
        this.matcher = matcher;
        this.sends = sends;
    }

    /** Handles one rendezvous frame that arrived for the endpoint {@code source}; releases the frame. */
    public void onFrame(Channel source, AmFrame frame) {
        try {
            ByteBuf h = frame.header();
            int at = h.readerIndex();
            switch (frame.amId()) {
                case AmIds.RNDV_RTS -> {
                    ByteBuf key = RndvHeaders.readRtsKey(h); // checks the length
                    matcher.onRts(source, h.getLongLE(at), h.getLongLE(at + 8), h.getLongLE(at + 16), key);
                }
                case AmIds.RNDV_RTR -> {
                    ByteBuf key = RndvHeaders.readRtrKey(h); // checks the length
                    sends.onRtr(source, h.getLongLE(at), h.getLongLE(at + 8), h.getLongLE(at + 16), key);
                }
                case AmIds.RNDV_DATA -> {
                    check(frame, RndvHeaders.DATA_LENGTH);
                    matcher.onRndvData(source, h.getLongLE(at), h.getLongLE(at + 8), frame.payload().retain());
                }
                case AmIds.RNDV_ATS -> {
                    check(frame, RndvHeaders.ATS_LENGTH);
                    sends.onAts(source, h.getLongLE(at), h.getByte(at + 8));
                }
                case AmIds.RNDV_ATP -> {
                    check(frame, RndvHeaders.ATP_LENGTH);
                    matcher.onAtp(source, h.getLongLE(at), h.getByte(at + 8), h.getLongLE(at + 9));
                }
                default -> throw new ProtocolException("not a rendezvous frame: " + AmIds.name(frame.amId()));
            }
        } finally {
            frame.release();
        }
    }

    /**
     * A frame on the lane of an endpoint that has ended, which stays open while receives offered to its peer for PUT
     * are held: an ATP or the first DATA of one of them releases it ({@link TagMatcher#onHeldAtpOrData}); everything
     * else is dropped. Never throws: the lane is only waiting for those. Releases the frame.
     */
    public void onFrameAfterClose(Channel source, AmFrame frame) {
        try {
            ByteBuf h = frame.header();
            if ((frame.amId() == AmIds.RNDV_ATP && h.readableBytes() == RndvHeaders.ATP_LENGTH)
                    || (frame.amId() == AmIds.RNDV_DATA && h.readableBytes() == RndvHeaders.DATA_LENGTH)) {
                matcher.onHeldAtpOrData(source, h.getLongLE(h.readerIndex()));
            }
        } finally {
            frame.release();
        }
    }

    private static void check(AmFrame frame, int headerLength) {
        if (frame.header().readableBytes() != headerLength) {
            throw new ProtocolException(AmIds.name(frame.amId()) + " header is " + frame.header().readableBytes()
                    + " bytes, expected " + headerLength);
        }
    }
}
