package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.Promise;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Receives a test posts to a worker's {@link TagMatcher}, and the messages they got, released by {@link #close}. */
final class PostedReceives implements AutoCloseable {

    private final TagMatcher matcher;
    private final EventExecutor loop;
    private final List<TagMessage> received = new ArrayList<>();

    PostedReceives(TagMatcher matcher, EventExecutor loop) {
        this.matcher = matcher;
        this.loop = loop;
    }

    Promise<TagMessage> post(long tag, long mask) {
        return post(tag, mask, null);
    }

    /** A receive of {@code tag} under {@code mask} into {@code into} (null: a buffer is allocated). */
    Promise<TagMessage> post(long tag, long mask, ByteBuf into) {
        Promise<TagMessage> p = loop.newPromise();
        matcher.post(new TagReceive(tag, mask, into, p));
        return p;
    }

    /** The message a receive completed with, kept for release after the test. */
    TagMessage message(Promise<TagMessage> p) {
        assertTrue(p.isDone(), "receive not complete");
        assertTrue(p.isSuccess(), () -> "receive failed: " + p.cause());
        TagMessage m = p.getNow();
        received.add(m);
        return m;
    }

    void assertReceived(Promise<TagMessage> p, long tag, String content) {
        TagMessage m = message(p);
        assertEquals(tag, m.tag(), "tag");
        assertEquals(content, m.content().toString(StandardCharsets.UTF_8), "content");
    }

    /** The bytes of the message a receive completed with. */
    byte[] bytes(Promise<TagMessage> p) {
        ByteBuf c = message(p).content();
        byte[] a = new byte[c.readableBytes()];
        c.getBytes(c.readerIndex(), a);
        return a;
    }

    @Override
    public void close() {
        received.forEach(TagMessage::release);
        received.clear();
    }
}
