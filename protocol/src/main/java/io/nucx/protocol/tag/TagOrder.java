package io.nucx.protocol.tag;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.util.ReferenceCountUtil;

import java.util.ArrayDeque;

/**
 * The top of the tag protocols in an endpoint's pipeline: tagged messages go on to the user's handlers in the order
 * the peer wrote them, whatever protocol carried each. A message's place is fixed when its first frame arrives (frames
 * other than rendezvous data travel in order on the AM lane); a message still arriving comes as a
 * {@link PipelineSlot}, and whatever arrives behind it waits until it is whole. A stream codec above (length fields,
 * HTTP) therefore sees the bytes in order. Whole messages with nothing ahead pass straight through.
 */
public final class TagOrder extends ChannelInboundHandlerAdapter {

    /** Its name in an endpoint's pipeline. */
    public static final String NAME = "nucx.tag.order";

    /** Slots and whole messages waiting behind an incomplete slot, in arrival order. */
    private final ArrayDeque<Object> waiting = new ArrayDeque<>();
    private ChannelHandlerContext ctx;

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        this.ctx = ctx;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof PipelineSlot slot) {
            if (waiting.isEmpty() && slot.isDone()) {
                fire(slot.take());
            } else {
                slot.attach(this);
                waiting.add(slot);
            }
        } else if (msg instanceof TagMessage m && !waiting.isEmpty()) {
            waiting.add(m);
        } else {
            ctx.fireChannelRead(msg);
        }
    }

    /** A slot completed or was given up: deliver whatever is now at the front. */
    void slotDone() {
        boolean delivered = false;
        for (Object head; (head = waiting.peek()) != null; ) {
            if (head instanceof PipelineSlot s) {
                if (!s.isDone()) {
                    break;
                }
                waiting.poll();
                TagMessage m = s.take();
                if (m != null) {
                    fire(m);
                    delivered = true;
                }
            } else {
                waiting.poll();
                fire(head);
                delivered = true;
            }
        }
        if (delivered) {
            ctx.fireChannelReadComplete(); // possibly outside a read batch (an RMA read completing)
        }
    }

    private void fire(Object m) {
        if (m != null) {
            ctx.fireChannelRead(m);
        }
    }

    /** Messages waiting behind an incomplete one; for tests and diagnostics. */
    public int waiting() {
        return waiting.size();
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        for (Object o; (o = waiting.poll()) != null; ) {
            if (o instanceof PipelineSlot s) {
                s.detach();
            } else {
                ReferenceCountUtil.release(o);
            }
        }
    }
}
