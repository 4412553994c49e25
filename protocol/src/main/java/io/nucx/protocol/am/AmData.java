package io.nucx.protocol.am;

import io.netty.buffer.ByteBuf;
import io.netty.util.AbstractReferenceCounted;

/**
 * An active message to send (UCX's {@code ucp_am_send_nbx}): the receiver's handler id, a user header the handler
 * gets with it, and the data, which the protocol table carries eagerly or by rendezvous. Releasing it releases both
 * buffers; whoever holds it releases it.
 */
public final class AmData extends AbstractReferenceCounted {

    private final int id;
    private final ByteBuf header;
    private final ByteBuf content;
    private final boolean replyRequested;

    /**
     * @param replyRequested the receiver's handler gets this endpoint's peer endpoint to answer on (UCX's
     *                       {@code UCP_AM_SEND_FLAG_REPLY})
     */
    public AmData(int id, ByteBuf header, ByteBuf content, boolean replyRequested) {
        this.id = id;
        this.header = header;
        this.content = content;
        this.replyRequested = replyRequested;
    }

    public int id() {
        return id;
    }

    public ByteBuf header() {
        return header;
    }

    /** The data. */
    public ByteBuf content() {
        return content;
    }

    public boolean replyRequested() {
        return replyRequested;
    }

    /** The tag field of its first frame ({@link AmHeaders}). */
    public long tagField() {
        return AmHeaders.pack(id, replyRequested ? AmHeaders.FLAG_REPLY : 0, header.readableBytes());
    }

    @Override
    protected void deallocate() {
        header.release();
        content.release();
    }

    @Override
    public AmData touch(Object hint) {
        header.touch(hint);
        content.touch(hint);
        return this;
    }

    @Override
    public AmData retain() {
        super.retain();
        return this;
    }

    @Override
    public String toString() {
        return "AmData(id=" + id + ", header " + header.readableBytes() + "B, " + content.readableBytes() + "B"
                + (replyRequested ? ", reply" : "") + ")";
    }
}
