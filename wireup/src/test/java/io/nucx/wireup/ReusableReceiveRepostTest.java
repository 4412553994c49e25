package io.nucx.wireup;

import io.netty.buffer.ByteBuf;
import io.netty.util.concurrent.Future;
import io.nucx.protocol.tag.TagMessage;
import io.nucx.protocol.tag.TagReceive;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A reusable receive posted a second time, from a thread other than the worker's loop, while it is still posted: the
 * receive then matches as its handler was told. If the handler heard {@code failed} (the receive no longer posted)
 * and the user posts it again after another receive of the same tag, that other receive is first in line; if it did
 * not, the first post stands and the receive is first.
 */
@Timeout(60)
class ReusableReceiveRepostTest {

    private static final long TAG = 0x5150;

    @RegisterExtension
    final TestWorkers workers = new TestWorkers();

    /** What the handler heard, in order: "got:&lt;first byte&gt;" or "failed:&lt;cause&gt;". */
    private static final class Events implements TagReceive.Handler {
        final LinkedBlockingQueue<String> events = new LinkedBlockingQueue<>();

        @Override
        public void received(long tag, ByteBuf data) {
            try {
                events.add("got:" + data.getByte(data.readerIndex()));
            } finally {
                data.release();
            }
        }

        @Override
        public void failed(Throwable cause) {
            events.add("failed:" + cause);
        }
    }

    @Test
    void aSecondPostFromAnotherThreadLeavesNoStaleCopyBehind() throws Exception {
        String[] settings = TestWorkers.settings("shm", "-");
        DefaultWorker a = workers.start("a", settings);
        DefaultWorker b = workers.start("b", settings);
        TestWorkers.Pair p = TestWorkers.connected(a, b);
        Events h = new Events();
        TagReceive r = TagReceive.reusable(TAG, -1L, h);
        b.tagRecv(r); // from the test's thread: posted on b's loop
        b.eventLoop().submit(() -> { }).get(10, TimeUnit.SECONDS);
        b.tagRecv(r); // again, while posted
        b.eventLoop().submit(() -> { }).get(10, TimeUnit.SECONDS);
        String heard = h.events.poll(200, TimeUnit.MILLISECONDS);
        boolean toldGone = heard != null && heard.startsWith("failed:");
        // Another receive of the tag; then, if the handler was told the receive is over, the user posts it again.
        Future<TagMessage> other = b.tagRecv(TAG, -1L);
        if (toldGone) {
            b.tagRecv(r);
        }
        b.eventLoop().submit(() -> { }).get(10, TimeUnit.SECONDS);
        int expected = b.eventLoop().submit(() -> b.protocols().matcher().expectedCount()).get(10, TimeUnit.SECONDS);
        p.ab().tagSend(TAG, TestWorkers.pattern(1, 1).setByte(0, 1)).sync();
        p.ab().tagSend(TAG, TestWorkers.pattern(2, 1).setByte(0, 2)).sync();
        TagMessage m = other.get(10, TimeUnit.SECONDS);
        int otherGot;
        try {
            otherGot = m.content().getByte(0);
        } finally {
            m.release();
        }
        String reusableGot = h.events.poll(10, TimeUnit.SECONDS);
        assertNotNull(reusableGot, "the reusable receive got nothing (handler heard " + heard + ")");
        String what = "handler heard " + heard + " after the second post; " + expected + " receives counted posted; "
                + "the other receive got message " + otherGot + ", the reusable one " + reusableGot;
        if (toldGone) {
            // Told it was over, posted again after the other receive: the other is first.
            assertEquals(1, otherGot, what);
            assertEquals("got:2", reusableGot, what);
        } else {
            assertNull(heard, what);
            assertEquals("got:1", reusableGot, what);
            assertEquals(2, otherGot, what);
        }
        assertEquals(2, expected, what);
        assertNull(h.events.poll(100, TimeUnit.MILLISECONDS), what);
    }
}
