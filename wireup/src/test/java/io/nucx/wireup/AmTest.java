package io.nucx.wireup;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.util.concurrent.Future;
import io.nucx.AmMessage;
import io.nucx.Endpoint;
import io.nucx.protocol.MemoryBudget;
import io.nucx.protocol.am.AmCodec;
import io.nucx.protocol.am.NoAmHandlerException;
import io.nucx.protocol.tag.RndvProtocols;
import io.nucx.protocol.tag.TagMessage;
import io.nucx.transport.shm.ShmChannel;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static io.nucx.wireup.TestWorkers.assertPattern;
import static io.nucx.wireup.TestWorkers.awaitTrue;
import static io.nucx.wireup.TestWorkers.directPattern;
import static io.nucx.wireup.TestWorkers.pattern;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Active messages between two workers of this process over each transport: every size of data (eager and
 * rendezvous) with and without a user header reaches the handler of its id in send order; rendezvous data received
 * into the handler's buffer, during the call or after it; the reply endpoint; unknown ids dropped and counted without
 * harm to the endpoint; a header over the limit refused at the sender; handlers replaced and removed.
 */
@Timeout(180)
class AmTest {

    @RegisterExtension
    final TestWorkers workers = new TestWorkers();

    /** What a handler saw: the message's id, header and data (copied: the message is released after the call). */
    record Seen(int id, byte[] header, boolean rendezvous, ByteBuf data, Future<Void> received, Endpoint reply) {
    }

    /** Registers one recording handler for ids {@code 0..count-1}; rendezvous data are received during the call. */
    private static BlockingQueue<Seen> record(DefaultWorker w, int count) {
        BlockingQueue<Seen> seen = new LinkedBlockingQueue<>();
        for (int id = 0; id < count; id++) {
            w.setAmHandler(id, m -> seen.add(seen(m)));
        }
        return seen;
    }

    private static Seen seen(AmMessage m) {
        byte[] header = new byte[m.header().readableBytes()];
        m.header().getBytes(m.header().readerIndex(), header);
        // Native memory for even ids: a PUT can write there straight (rndv/put/zcopy); heap for odd ones.
        ByteBuf data = m.id() % 2 == 0 ? ByteBufAllocator.DEFAULT.directBuffer((int) m.dataLength())
                : ByteBufAllocator.DEFAULT.heapBuffer((int) m.dataLength());
        Future<Void> received = m.receiveData(data);
        return new Seen(m.id(), header, m.isRendezvous(), data, received, m.replyEndpoint());
    }

    private static void assertBytes(long seed, int length, byte[] actual) {
        ByteBuf b = Unpooled.wrappedBuffer(actual);
        assertPattern(seed, length, b);
    }

    private static void await(Future<?> f, String what) throws InterruptedException {
        assertTrue(f.await(60, TimeUnit.SECONDS), what + " did not complete");
        assertTrue(f.isSuccess(), () -> what + " failed: " + f.cause());
    }

    private static Throwable awaitFailure(Future<?> f, String what) throws InterruptedException {
        assertTrue(f.await(60, TimeUnit.SECONDS), what + " did not complete");
        assertFalse(f.isSuccess(), what + " succeeded");
        return f.cause();
    }

    @ParameterizedTest(name = "{0} {1}")
    @CsvSource({
        "tcp, -",
        "self, -",
        "shm, -",
        "'shm,cma', RNDV_SCHEME=get_zcopy;SHM_COPY_BW=1g",
        "'shm,cma', RNDV_SCHEME=put_zcopy;SHM_COPY_BW=1g",
    })
    void everySizeReachesItsHandlerInSendOrder(String tls, String setting) throws Exception {
        DefaultWorker a = workers.start("a", TestWorkers.settings(tls, setting));
        DefaultWorker b = workers.start("b", TestWorkers.settings(tls, setting));
        // {data bytes, header bytes}: nothing at all, header only, one byte, copy, fragments, rendezvous
        int[][] sizes = {{0, 0}, {0, 16}, {1, 0}, {8192, 8}, {100, 4096}, {70_000, 0}, {1 << 20, 4096},
            {3 << 20, 1}, {16 << 20, 100}, {4, 4}};
        BlockingQueue<Seen> seen = record(b, sizes.length);
        Endpoint ab = a.connect(b.address());
        List<ChannelFuture> sends = new ArrayList<>();
        for (int id = 0; id < sizes.length; id++) {
            ByteBuf data = id % 2 == 0 ? directPattern(id, sizes[id][0]) : pattern(id, sizes[id][0]);
            sends.add(ab.amSend(id, pattern(1000 + id, sizes[id][1]), data));
        }
        for (int id = 0; id < sizes.length; id++) {
            Seen s = seen.poll(60, TimeUnit.SECONDS);
            assertNotNull(s, "active message " + id + " did not arrive");
            try {
                assertEquals(id, s.id(), "the handler saw the messages out of send order");
                assertBytes(1000 + id, sizes[id][1], s.header());
                await(s.received(), "receiving the data of message " + id);
                assertPattern(id, sizes[id][0], s.data());
                assertNull(s.reply(), "no reply endpoint was asked for");
                if (sizes[id][0] <= 1) {
                    assertFalse(s.rendezvous(), "a " + sizes[id][0] + "-byte message came by rendezvous");
                }
                if (sizes[id][0] == 16 << 20) {
                    assertTrue(s.rendezvous(), "a 16 MiB message came eagerly");
                }
            } finally {
                s.data().release();
            }
        }
        for (int id = 0; id < sizes.length; id++) {
            await(sends.get(id), "send " + id);
        }
        assertEquals(0, b.counters().count(AmCodec.DROPPED_COUNTER));
    }

    @ParameterizedTest(name = "{0} {1}")
    // tcp: from 1 MiB by rendezvous, whatever the model says (on io_uring, whose lanes do not place payloads, eager
    // from the sender's memory is cheaper up to about 8 MB, as measured: BENCHMARKS.md)
    @CsvSource({"tcp, RNDV_THRESH=1m", "self, -", "shm, -", "'shm,cma', RNDV_SCHEME=get_zcopy;SHM_COPY_BW=1g",
        "'shm,cma', RNDV_SCHEME=put_zcopy;SHM_COPY_BW=1g"})
    void dataReceivedAfterTheHandlerReturned(String tls, String setting) throws Exception {
        DefaultWorker a = workers.start("a", TestWorkers.settings(tls, setting));
        DefaultWorker b = workers.start("b", TestWorkers.settings(tls, setting));
        BlockingQueue<AmMessage> kept = new LinkedBlockingQueue<>();
        b.setAmHandler(5, m -> kept.add(m.keep()));
        Endpoint ab = a.connect(b.address());
        int big = 4 << 20;
        ByteBuf header = pattern(7, 32).retain(); // ours again once the send completed
        ChannelFuture rndv = ab.amSend(5, header, directPattern(8, big));
        ChannelFuture eager = ab.amSend(5, pattern(9, 3), pattern(10, 100));
        AmMessage r = kept.poll(60, TimeUnit.SECONDS);
        AmMessage e = kept.poll(60, TimeUnit.SECONDS);
        assertNotNull(r, "the rendezvous message did not arrive");
        assertNotNull(e, "the eager message did not arrive");
        ByteBuf into = ByteBufAllocator.DEFAULT.directBuffer(big);
        try {
            assertTrue(r.isRendezvous(), "4 MiB came eagerly");
            assertFalse(e.isRendezvous());
            // Kept and not asked for: the sender's data stay where they are, its send waits.
            await(eager, "the eager send");
            assertFalse(a.eventLoop().submit(rndv::isDone).get(), "the rendezvous send completed before its data "
                    + "were asked for");
            assertPattern(7, 32, r.header()); // the header outlives the call of a kept message
            // A kept rendezvous message is charged to its endpoint's receive budget, as an unexpected RTS is.
            assertEquals(MemoryBudget.ENTRY_COST + 32L, (long) b.eventLoop().submit(() -> b.protocols()
                    .receiveMemoryHeld()).get());
            assertPattern(10, 100, e.data());
            assertThrows(IllegalStateException.class, r::data);

            ByteBuf small = Unpooled.buffer(16, 16);
            Throwable tooSmall = awaitFailure(r.receiveData(small), "receiving into a 16-byte buffer");
            assertInstanceOf(IllegalArgumentException.class, tooSmall);
            assertTrue(tooSmall.getMessage().contains(String.valueOf(big)), tooSmall.getMessage());

            into.writeByte(0x55); // data go at the writer index
            await(r.receiveData(into), "receiving the rendezvous data after the handler returned");
            assertEquals(0x55, into.getByte(0));
            assertPattern(8, big, into.slice(1, big));
            await(rndv, "the rendezvous send once its data were received");
            header.setZero(0, 32); // the sender's buffer is free now; the kept message's header is not
            assertPattern(7, 32, r.header());
            assertEquals(0L, (long) b.eventLoop().submit(() -> b.protocols().receiveMemoryHeld()).get());
            assertInstanceOf(IllegalStateException.class, awaitFailure(r.receiveData(Unpooled.buffer(big)),
                    "receiving twice"));

            ByteBuf copy = Unpooled.buffer(100);
            await(e.receiveData(copy), "receiving the eager data");
            assertPattern(10, 100, copy);
            // The rendezvous went the way the scheme says: read from the sender's memory, or written into ours.
            if (setting.contains("get_zcopy")) {
                assertEquals(1, b.counters().count(RndvProtocols.RECV_GET_COUNTER), "rndv/get/zcopy reads");
            } else if (setting.contains("put_zcopy")) {
                assertEquals(1, b.counters().count(RndvProtocols.RECV_PUT_COUNTER), "rndv/put/zcopy writes");
            }
        } finally {
            header.release();
            into.release();
            r.release();
            e.release();
        }
    }

    /**
     * A short active message goes to its handler where the transport read it (shm's ring, self's record ring): one its
     * handler keeps copies its header and data out before that room is reused, one whose handler receives its data
     * gets them straight from there, one whose handler ignores it is never copied. Thousands of 1 KiB messages after
     * the kept one go through the same room; the kept one still reads as sent.
     */
    @ParameterizedTest(name = "{0}")
    @CsvSource({"self", "shm"})
    void aKeptShortMessageOutlivesTheRoomItArrivedIn(String tls) throws Exception {
        DefaultWorker a = workers.start("a", "TLS", tls);
        DefaultWorker b = workers.start("b", "TLS", tls);
        BlockingQueue<AmMessage> kept = new LinkedBlockingQueue<>();
        b.setAmHandler(3, m -> kept.add(m.keep()));
        AtomicInteger ignored = new AtomicInteger();
        b.setAmHandler(4, m -> ignored.incrementAndGet());
        int size = 1024;
        ByteBuf expected = pattern(41, size);
        ByteBuf into = Unpooled.buffer(size, size); // b's loop only
        AtomicInteger received = new AtomicInteger();
        AtomicInteger wrong = new AtomicInteger();
        b.setAmHandler(5, m -> {
            into.clear();
            m.receiveData(into);
            if (!into.equals(expected) || m.header().readableBytes() != 0) {
                wrong.incrementAndGet();
            }
            received.incrementAndGet();
        });
        try {
            Endpoint ab = a.connect(b.address());
            ab.amSend(3, pattern(31, 16), pattern(32, 200));
            int each = 4_000; // 8,000 KiB through the rings after the kept message: several times round
            ChannelFuture last = null;
            for (int i = 0; i < each; i++) {
                ab.amSend(4, Unpooled.EMPTY_BUFFER, pattern(40, size));
                last = ab.amSend(5, Unpooled.EMPTY_BUFFER, pattern(41, size));
            }
            await(last, "the last send");
            awaitTrue(() -> received.get() == each && ignored.get() == each, "all " + each + " of each arriving");
            assertEquals(0, wrong.get(), "messages whose data or header differed from what was sent");
            AmMessage m = kept.poll(60, TimeUnit.SECONDS);
            assertNotNull(m, "the kept message did not arrive");
            try {
                assertFalse(m.isRendezvous());
                assertPattern(31, 16, m.header());
                assertPattern(32, 200, m.data());
                ByteBuf copy = Unpooled.buffer(200);
                await(m.receiveData(copy), "receiving the kept message's data after thousands more");
                assertPattern(32, 200, copy);
            } finally {
                m.release();
            }
        } finally {
            b.eventLoop().submit(() -> { into.release(); }).get();
            expected.release();
        }
    }

    /**
     * A short message's object carries the next one once its handler returned without keeping it (no object per
     * message): a handle the handler held on to by mistake then fails as one of a released message, and releasing it
     * again does nothing, so it never reaches the later message that the same object now carries, kept or not.
     */
    @ParameterizedTest(name = "{0}")
    @CsvSource({"self", "shm", "tcp"})
    void aHandleHeldPastItsHandlerNeverReachesTheMessageAfterIt(String tls) throws Exception {
        DefaultWorker a = workers.start("a", "TLS", tls);
        DefaultWorker b = workers.start("b", "TLS", tls);
        BlockingQueue<AmMessage> held = new LinkedBlockingQueue<>();
        b.setAmHandler(6, held::add);                // not kept: released when the handler returns
        b.setAmHandler(7, m -> held.add(m.keep()));  // kept
        Endpoint ab = a.connect(b.address());
        await(ab.amSend(6, pattern(61, 8), pattern(62, 100)), "the first send");
        AmMessage stale = held.poll(60, TimeUnit.SECONDS);
        assertNotNull(stale, "the first message did not arrive");
        await(ab.amSend(7, pattern(71, 12), pattern(72, 300)), "the second send");
        AmMessage next = held.poll(60, TimeUnit.SECONDS);
        assertNotNull(next, "the second message did not arrive");
        try {
            assertEquals(6, stale.id());
            IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> b.eventLoop().submit(stale::header).syncUninterruptibly().getNow());
            assertTrue(e.getMessage().contains("active message 6 was released"), e.getMessage());
            Future<Void> late = stale.receiveData(Unpooled.buffer(100));
            assertTrue(late.await(10, TimeUnit.SECONDS) && late.cause() instanceof IllegalStateException,
                    () -> "receiving a released message's data: " + late.cause());
            stale.release(); // a second release of the first: must not release the second
            b.eventLoop().submit(() -> {
            }).syncUninterruptibly();
            assertEquals(7, next.id());
            assertBytes(71, 12, bytes(b.eventLoop().submit(() -> copy(next.header())).get()));
            ByteBuf data = Unpooled.buffer(300);
            await(next.receiveData(data), "receiving the kept message's data");
            assertPattern(72, 300, data);
        } finally {
            next.release();
        }
    }

    private static ByteBuf copy(ByteBuf b) {
        return Unpooled.copiedBuffer(b);
    }

    private static byte[] bytes(ByteBuf b) {
        byte[] a = new byte[b.readableBytes()];
        b.getBytes(b.readerIndex(), a);
        return a;
    }

    /**
     * {@link Endpoint#tryAmSendShort} sends the same header and data buffers again and again without taking them: on
     * the loop, each call copies header and data into one record (self, shm) or one short frame in the lane's outbound
     * buffer (tcp) (true), the buffers' indices and reference counts left alone, and the messages reach their handler
     * in order among ordinary sends, with and without a header, with and without a reply endpoint. False, nothing
     * sent: a header and data over 8 KiB together, off the loop. A bad id or header is refused by name.
     */
    @ParameterizedTest(name = "{0}")
    @CsvSource({"self", "shm", "tcp"})
    void tryAmSendShortSendsTheCallersBuffersWithoutTakingThem(String tls) throws Exception {
        DefaultWorker a = workers.start("a", "TLS", tls);
        DefaultWorker b = workers.start("b", "TLS", tls);
        BlockingQueue<Seen> seen = record(b, 2);
        Endpoint ab = TestWorkers.wiredUp(a, b);
        ByteBuf header = pattern(81, 24);
        ByteBuf data = TestWorkers.directPattern(82, 300);
        ByteBuf big = pattern(83, 8192);
        int n = 100;
        try {
            List<Boolean> taken = ab.eventLoop().submit(() -> {
                List<Boolean> t = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    ByteBuf h = i % 2 == 0 ? header : Unpooled.EMPTY_BUFFER;
                    if (i % 25 == 10) { // an ordinary send among them keeps its place
                        ab.amSend(i % 2, h.retainedDuplicate(), data.retainedDuplicate(), i % 3 == 0);
                        t.add(true);
                        continue;
                    }
                    boolean now = ab.tryAmSendShort(i % 2, h, data, i % 3 == 0);
                    t.add(now);
                    if (!now) {
                        ab.amSend(i % 2, h.retainedDuplicate(), data.retainedDuplicate(), i % 3 == 0);
                    }
                }
                t.add(ab.tryAmSendShort(0, header, big, false)); // 24 + 8,192 bytes: over what is copied together
                ab.flush();
                return t;
            }).get(10, TimeUnit.SECONDS);
            for (int i = 0; i < n; i++) {
                if (i % 25 != 10) {
                    assertEquals(true, taken.get(i), "message " + i + " over " + tls);
                }
            }
            assertEquals(false, taken.get(n), "a header and data over 8 KiB together");
            for (int i = 0; i < n; i++) {
                Seen s = seen.poll(60, TimeUnit.SECONDS);
                assertNotNull(s, "message " + i + " did not arrive");
                try {
                    assertEquals(i % 2, s.id(), "message " + i);
                    assertBytes(81, i % 2 == 0 ? 24 : 0, s.header());
                    await(s.received(), "receiving message " + i);
                    assertPattern(82, 300, s.data());
                    assertEquals(i % 3 == 0, s.reply() != null, "message " + i + "'s reply endpoint");
                } finally {
                    s.data().release();
                }
            }
            for (ByteBuf buf : List.of(header, data)) {
                assertEquals(1, buf.refCnt(), "the caller's buffer keeps its one reference");
                assertEquals(0, buf.readerIndex());
            }
            assertEquals(false, ab.tryAmSendShort(0, header, data, false), "off the endpoint's loop");
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> ab.tryAmSendShort(70_000, header, data, false));
            assertTrue(e.getMessage().contains("active message id 70000 is outside 0 to 65535"), e.getMessage());
            ByteBuf tooLong = Unpooled.buffer(4097).writerIndex(4097);
            e = assertThrows(IllegalArgumentException.class, () -> ab.tryAmSendShort(0, tooLong, data, false));
            assertTrue(e.getMessage().contains("header of 4097 bytes is over the limit of 4096"), e.getMessage());
            Thread.sleep(200);
            assertNull(seen.poll(), "nothing was sent for a false or a refusal");
        } finally {
            header.release();
            data.release();
            big.release();
        }
    }

    @Test
    void rendezvousMessageLetGoCompletesItsSender() throws Exception {
        DefaultWorker a = workers.start("a", "TLS", "tcp");
        DefaultWorker b = workers.start("b", "TLS", "tcp");
        List<Long> lengths = new CopyOnWriteArrayList<>();
        b.setAmHandler(1, m -> lengths.add(m.dataLength())); // neither keeps nor receives: dropped, as UCX drops
        Endpoint ab = a.connect(b.address());
        ChannelFuture send = ab.amSend(1, pattern(1, 8), directPattern(2, 8 << 20));
        await(send, "a rendezvous send whose data the handler did not want");
        assertEquals(List.of((long) (8 << 20)), lengths);
        assertEquals(0, b.protocols().rndvInFlight().get(), "a receive is still in progress");
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource({"tcp", "self"})
    void replyEndpointAnswersTheSender(String tls) throws Exception {
        DefaultWorker a = workers.start("a", "TLS", tls);
        DefaultWorker b = workers.start("b", "TLS", tls);
        // b answers each request on the endpoint it is given, echoing header and data (eager or rendezvous)
        b.setAmHandler(10, m -> {
            Endpoint reply = m.replyEndpoint();
            ByteBuf data = ByteBufAllocator.DEFAULT.directBuffer((int) Math.max(1, m.dataLength()));
            ByteBuf header = m.header().retainedDuplicate();
            m.receiveData(data).addListener(f -> reply.amSend(11, header, data));
        });
        BlockingQueue<Seen> replies = record(a, 12);
        Endpoint ab = a.connect(b.address());
        int[] sizes = {10, 6 << 20};
        for (int i = 0; i < sizes.length; i++) {
            await(ab.amSend(10, pattern(50 + i, 12), directPattern(60 + i, sizes[i]), true), "request " + i);
            Seen s = replies.poll(60, TimeUnit.SECONDS);
            assertNotNull(s, "no reply to request " + i);
            try {
                assertEquals(11, s.id());
                assertBytes(50 + i, 12, s.header());
                await(s.received(), "the reply's data");
                assertPattern(60 + i, sizes[i], s.data());
                assertNull(s.reply(), "the reply did not ask for a reply endpoint");
            } finally {
                s.data().release();
            }
        }
        assertEquals(1, a.endpoints().size(), "the reply took a second endpoint");
    }

    @Test
    void unknownIdIsDroppedAndCountedAndTheEndpointGoesOn() throws Exception {
        DefaultWorker a = workers.start("a", "TLS", "tcp");
        DefaultWorker b = workers.start("b", "TLS", "tcp");
        BlockingQueue<Seen> seen = record(b, 1);
        Endpoint ab = a.connect(b.address());
        // Eager: the sender cannot tell (as in UCX); the receiver counts it.
        await(ab.amSend(99, pattern(1, 10), pattern(2, 100)), "an eager send to an id without a handler");
        awaitTrue(() -> b.counters().count(AmCodec.DROPPED_COUNTER) == 1, "the drop was not counted");
        // Rendezvous: the receiver refuses it and the sender's future says so.
        Throwable refused = awaitFailure(ab.amSend(99, pattern(3, 10), directPattern(4, 8 << 20)),
                "a rendezvous send to an id without a handler");
        assertInstanceOf(NoAmHandlerException.class, refused);
        assertTrue(refused.getMessage().contains("99"), refused.getMessage());
        assertEquals(2, b.counters().count(AmCodec.DROPPED_COUNTER));
        // The endpoint and its lanes are untouched.
        await(ab.amSend(0, pattern(5, 1), pattern(6, 1000)), "a send to a known id after the drops");
        Seen s = seen.poll(60, TimeUnit.SECONDS);
        assertNotNull(s);
        try {
            assertPattern(6, 1000, s.data());
        } finally {
            s.data().release();
        }
        assertTrue(ab.isActive(), "the endpoint ended");
        assertTrue(b.laneFailures().isEmpty(), () -> "a lane closed: " + b.laneFailures());
    }

    @Test
    void aHandlerThatThrowsIsCountedAndItsMessageReleased() throws Exception {
        DefaultWorker a = workers.start("a", "TLS", "tcp");
        DefaultWorker b = workers.start("b", "TLS", "tcp");
        BlockingQueue<Seen> seen = record(b, 1);
        b.setAmHandler(4, m -> {
            throw new IllegalStateException("a bug in the handler");
        });
        Endpoint ab = a.connect(b.address());
        await(ab.amSend(4, pattern(1, 4), pattern(2, 10)), "an eager send to a handler that throws");
        // Released after the throw without its data asked for: the rendezvous sender completes.
        await(ab.amSend(4, pattern(3, 4), directPattern(4, 8 << 20)), "a rendezvous send to a handler that throws");
        awaitTrue(() -> b.counters().count(AmCodec.HANDLER_FAILED_COUNTER) == 2, "the failures were not counted");
        await(ab.amSend(0, pattern(5, 1), pattern(6, 10)), "a send to another handler");
        Seen s = seen.poll(60, TimeUnit.SECONDS);
        assertNotNull(s);
        try {
            assertPattern(6, 10, s.data());
        } finally {
            s.data().release();
        }
        assertEquals(0, b.counters().count(AmCodec.DROPPED_COUNTER));
    }

    @Test
    void headerOverTheLimitAndIdOutOfRangeFailAtTheSender() throws Exception {
        DefaultWorker a = workers.start("a", "TLS", "self");
        DefaultWorker b = workers.start("b", "TLS", "self");
        BlockingQueue<Seen> seen = record(b, 1);
        Endpoint ab = a.connect(b.address());
        Throwable tooLong = awaitFailure(ab.amSend(0, pattern(1, 4097), pattern(2, 10)), "a 4097-byte header");
        assertInstanceOf(IllegalArgumentException.class, tooLong);
        assertTrue(tooLong.getMessage().contains("4097") && tooLong.getMessage().contains("4096"),
                tooLong.getMessage());
        Throwable badId = awaitFailure(ab.amSend(65_536, pattern(1, 4), pattern(2, 10)), "id 65536");
        assertInstanceOf(IllegalArgumentException.class, badId);
        assertTrue(badId.getMessage().contains("65535"), badId.getMessage());
        // Nothing of them was sent: the next message is the first the handler sees.
        await(ab.amSend(0, pattern(3, 4096), pattern(4, 10)), "a header at the limit");
        Seen s = seen.poll(60, TimeUnit.SECONDS);
        assertNotNull(s);
        try {
            assertBytes(3, 4096, s.header());
            assertPattern(4, 10, s.data());
        } finally {
            s.data().release();
        }
        assertNull(seen.poll(0, TimeUnit.SECONDS));
        assertThrows(IllegalArgumentException.class, () -> b.setAmHandler(-1, m -> { }));
    }

    @Test
    void handlerReplacedThenRemoved() throws Exception {
        DefaultWorker a = workers.start("a", "TLS", "shm");
        DefaultWorker b = workers.start("b", "TLS", "shm");
        BlockingQueue<String> calls = new LinkedBlockingQueue<>();
        b.setAmHandler(3, m -> calls.add("first " + m.dataLength()));
        Endpoint ab = a.connect(b.address());
        await(ab.amSend(3, Unpooled.EMPTY_BUFFER, pattern(1, 1)), "send 1");
        assertEquals("first 1", calls.poll(60, TimeUnit.SECONDS));
        b.setAmHandler(3, m -> calls.add("second " + m.dataLength()));
        await(ab.amSend(3, Unpooled.EMPTY_BUFFER, pattern(1, 2)), "send 2");
        assertEquals("second 2", calls.poll(60, TimeUnit.SECONDS));
        b.setAmHandler(3, null);
        await(ab.amSend(3, Unpooled.EMPTY_BUFFER, pattern(1, 3)), "send 3");
        awaitTrue(() -> b.counters().count(AmCodec.DROPPED_COUNTER) == 1, "the message to the removed handler was "
                + "not dropped");
        // Handled in arrival order: had the removed handler been called, its call would precede this one.
        b.setAmHandler(3, m -> calls.add("third " + m.dataLength()));
        await(ab.amSend(3, Unpooled.EMPTY_BUFFER, pattern(1, 4)), "send 4");
        assertEquals("third 4", calls.poll(60, TimeUnit.SECONDS));
        assertTrue(calls.isEmpty(), () -> "unexpected calls: " + calls);
    }

    /**
     * Over shm an eager active message in fragments, up to 1 MiB with its header, goes from the ring straight into one
     * buffer of the whole, its first fragment too: one copy on the receiver, as a tagged message into a posted
     * receive's buffer (they were copied out of the ring, again into a buffer per fragment and once more into one
     * buffer at the end). A bigger one is still put together as before, and arrives as whole.
     */
    @Test
    void overShmAnActiveMessageInFragmentsGoesFromTheRingStraightIntoOneBuffer() throws Exception {
        DefaultWorker a = workers.start("a", "TLS", "shm", "RNDV_THRESH", "1g");
        DefaultWorker b = workers.start("b", "TLS", "shm", "RNDV_THRESH", "1g");
        BlockingQueue<Seen> seen = record(b, 3);
        Endpoint ab = TestWorkers.wiredUp(a, b);
        Endpoint accepted = b.endpoints().iterator().next();
        // {data, header}: 100,000 B in two fragments, 1 MiB in all (the most taken whole), 2 MiB
        int[][] sizes = {{100_000, 8}, {(1 << 20) - 16, 16}, {2 << 20, 0}};
        for (int id = 0; id < sizes.length; id++) {
            await(ab.amSend(id, pattern(500 + id, sizes[id][1]), directPattern(id, sizes[id][0])), "send " + id);
            Seen s = seen.poll(60, TimeUnit.SECONDS);
            assertNotNull(s, "active message " + id + " did not arrive");
            try {
                assertFalse(s.rendezvous());
                assertBytes(500 + id, sizes[id][1], s.header());
                await(s.received(), "receiving message " + id);
                assertPattern(id, sizes[id][0], s.data());
            } finally {
                s.data().release();
            }
        }
        ShmChannel lane = (ShmChannel) TestWorkers.impl(accepted)
                .amLane();
        long placed = b.eventLoop().submit(lane::placedBytes).get(10, TimeUnit.SECONDS);
        // Every byte of the first two but a last fragment under the 1 KiB the ring places from; none of the third.
        long whole = 100_008 + (1 << 20);
        assertTrue(placed <= whole && placed > whole - 2 * 1024, () -> placed + " bytes copied from the ring "
                + "straight into a message's buffer, of " + whole);
    }

    @Test
    void activeMessagesNeverReachTagMatching() throws Exception {
        DefaultWorker a = workers.start("a", "TLS", "tcp");
        DefaultWorker b = workers.start("b", "TLS", "tcp");
        Future<TagMessage> wildcard = b.tagRecv(0, 0); // would take them if they reached the matcher
        BlockingQueue<Seen> seen = record(b, 1);
        Endpoint ab = a.connect(b.address());
        for (int size : new int[] {10, 100_000, 8 << 20}) {
            await(ab.amSend(0, pattern(1, 2), directPattern(size, size)), size + "-byte send");
            Seen s = seen.poll(60, TimeUnit.SECONDS);
            assertNotNull(s);
            try {
                await(s.received(), "receiving");
                assertPattern(size, size, s.data());
            } finally {
                s.data().release();
            }
        }
        assertFalse(b.eventLoop().submit(wildcard::isDone).get(), "an active message reached tag matching");
        assertEquals(0, (int) b.eventLoop().submit(b::unexpectedCount).get());
        wildcard.cancel(false);
    }

    @Test
    void keptRendezvousMessageFailsToReceiveOnceItsEndpointEnded() throws Exception {
        DefaultWorker a = workers.start("a", "TLS", "tcp");
        DefaultWorker b = workers.start("b", "TLS", "tcp");
        BlockingQueue<AmMessage> kept = new LinkedBlockingQueue<>();
        b.setAmHandler(2, m -> kept.add(m.keep()));
        Endpoint ab = a.connect(b.address());
        ChannelFuture send = ab.amSend(2, pattern(1, 4), directPattern(2, 8 << 20));
        AmMessage m = kept.poll(60, TimeUnit.SECONDS);
        assertNotNull(m);
        try {
            b.endpoints().iterator().next().close().sync();
            awaitFailure(send, "the rendezvous send whose receiver's endpoint closed");
            ByteBuf into = Unpooled.buffer(8 << 20);
            Throwable cause = awaitFailure(m.receiveData(into), "receiving from an ended endpoint");
            assertTrue(cause.getMessage().contains("went away"), cause.getMessage());
        } finally {
            m.release();
        }
    }
}
