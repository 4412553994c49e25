package io.nucx.protocol.tag;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.nucx.protocol.ProtocolException;
import io.nucx.transport.cma.CmaKey;
import org.junit.jupiter.api.Test;

import java.util.function.Consumer;
import java.util.function.Function;

import static io.nucx.protocol.tag.RndvEndpoint.bytes;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The rendezvous header layouts ({@link RndvHeaders}), with a cma key as the remote key, and malformed ones. */
class RndvHeadersTest {

    /** Behind the 24-byte RTS or RTR: the key's length, then the packed cma key of host 0x1122334455667788, pid 4242. */
    private static void assertCmaKeyAfterHeader(ByteBuf h, int at, long address, long length) {
        assertEquals(28, h.getUnsignedShortLE(at), "key length");
        assertEquals(0x1122334455667788L, h.getLongLE(at + 2), "host id");
        assertEquals(4242, h.getIntLE(at + 10), "pid");
        assertEquals(address, h.getLongLE(at + 14), "address");
        assertEquals(length, h.getLongLE(at + 22), "length");
    }

    @Test
    void anRtsWithARemoteKeyIsTheRtsFollowedByTheKeyLengthAndTheKey() {
        CmaKey key = new CmaKey(0x1122334455667788L, 4242, 0x7f00_0000_1000L, 5000);
        ByteBuf h = RndvHeaders.writeRts(Unpooled.buffer(), 9, 17, 5000, key.pack());
        try {
            assertEquals(RndvHeaders.rtsLength(key.pack()), h.readableBytes());
            assertEquals(54, h.readableBytes(), "24 + 2 + 28");
            assertEquals(9, h.getLongLE(0), "tag");
            assertEquals(17, h.getLongLE(8), "sender request id");
            assertEquals(5000, h.getLongLE(16), "size");
            assertCmaKeyAfterHeader(h, 24, 0x7f00_0000_1000L, 5000);
            assertArrayEquals(key.pack(), bytes(RndvHeaders.readRtsKey(h)));
            assertEquals(0, h.readerIndex(), "the header is left as it was");
        } finally {
            h.release();
        }
        ByteBuf plain = RndvHeaders.writeRts(Unpooled.buffer(), 9, 17, 5000, null);
        try {
            assertEquals(RndvHeaders.RTS_LENGTH, plain.readableBytes());
            assertNull(RndvHeaders.readRtsKey(plain));
        } finally {
            plain.release();
        }
    }

    @Test
    void anRtrWithARemoteKeyIsTheRtrFollowedByTheKeyLengthAndTheKeyAndAtpIsUcxsAckHeader() {
        CmaKey key = new CmaKey(0x1122334455667788L, 4242, 0x7f00_0000_2000L, 6000);
        ByteBuf h = RndvHeaders.writeRtr(Unpooled.buffer(), 17, 33, 6000, key.pack());
        try {
            assertEquals(RndvHeaders.rtrLength(key.pack()), h.readableBytes());
            assertEquals(58, h.readableBytes(), "28 + 2 + 28");
            assertEquals(17, h.getLongLE(0), "sender request id");
            assertEquals(33, h.getLongLE(8), "receiver request id");
            assertEquals(6000, h.getLongLE(16), "size");
            assertEquals(0, h.getIntLE(24), "placed fragment: none offered with a key");
            assertEquals(0, RndvHeaders.readRtrPlacedFragment(h));
            assertCmaKeyAfterHeader(h, 28, 0x7f00_0000_2000L, 6000);
            assertArrayEquals(key.pack(), bytes(RndvHeaders.readRtrKey(h)));
        } finally {
            h.release();
        }
        ByteBuf plain = RndvHeaders.writeRtr(Unpooled.buffer(), 17, 33, 6000, null);
        try {
            assertEquals(RndvHeaders.RTR_LENGTH, plain.readableBytes());
            assertEquals(28, plain.readableBytes(), "ids, size, placed fragment");
            assertNull(RndvHeaders.readRtrKey(plain));
            assertEquals(0, RndvHeaders.readRtrPlacedFragment(plain));
        } finally {
            plain.release();
        }
        ByteBuf placed = RndvHeaders.writeRtr(Unpooled.buffer(), 17, 33, 6000, 6000, null);
        try {
            assertEquals(RndvHeaders.RTR_LENGTH, placed.readableBytes());
            assertEquals(6000, placed.getIntLE(24), "placed fragment, after the size");
            assertEquals(6000, RndvHeaders.readRtrPlacedFragment(placed));
            assertNull(RndvHeaders.readRtrKey(placed));
            placed.setIntLE(24, -1); // 4 GiB - 1: no Java buffer is that large
            ProtocolException e = assertThrows(ProtocolException.class,
                    () -> RndvHeaders.readRtrPlacedFragment(placed));
            assertTrue(e.getMessage().contains("RNDV_RTR placed fragment is 4294967295 bytes"), e.getMessage());
        } finally {
            placed.release();
        }
        ByteBuf out = Unpooled.buffer();
        try {
            assertThrows(IllegalArgumentException.class, () -> RndvHeaders.writeRtr(out, 1, 2, 3, -1, null));
            assertEquals(0, out.writerIndex(), "nothing written");
        } finally {
            out.release();
        }
        ByteBuf atp = RndvHeaders.writeAtp(Unpooled.buffer(), 33, RndvHeaders.STATUS_CANCELED, 6000);
        try {
            assertEquals(RndvHeaders.ATP_LENGTH, atp.readableBytes());
            assertEquals(17, atp.readableBytes(), "UCX's ack header: req id, status, size");
            assertEquals(33, atp.getLongLE(0));
            assertEquals(-16, atp.getByte(8));
            assertEquals(6000, atp.getLongLE(9));
        } finally {
            atp.release();
        }
    }

    @Test
    void malformedRtsHeadersAreProtocolErrorsNamingWhatIsWrong() {
        Function<CmaKey, ByteBuf> rts = k -> RndvHeaders.writeRts(Unpooled.buffer(), 1, 2, 5000, k.pack());
        assertMalformed(rts, RndvHeaders::readRtsKey, "RNDV_RTS", h -> h.setShortLE(24, 27),
                "remote key length is 27, but the header has 28 bytes after it");
        assertMalformed(rts, RndvHeaders::readRtsKey, "RNDV_RTS", h -> h.setShortLE(24, 0xffff),
                "remote key length is 65535, expected 1 to 1024");
        assertMalformed(rts, RndvHeaders::readRtsKey, "RNDV_RTS", h -> h.setShortLE(24, 0),
                "remote key length is 0");
        assertMalformed(rts, RndvHeaders::readRtsKey, "RNDV_RTS", h -> h.writeByte(0),
                "the header has 29 bytes after it (55 in all)");
        assertMalformed(rts, RndvHeaders::readRtsKey, "RNDV_RTS", h -> h.writerIndex(25), "header is 25 bytes");
        assertMalformed(rts, RndvHeaders::readRtsKey, "RNDV_RTS", h -> h.writerIndex(23),
                "header is 23 bytes, expected 24");
        ByteBuf ok = rts.apply(new CmaKey(1, 2, 0x1000, 5000));
        try {
            assertArrayEquals(new CmaKey(1, 2, 0x1000, 5000).pack(), bytes(RndvHeaders.readRtsKey(ok)));
        } finally {
            ok.release();
        }
    }

    @Test
    void malformedRtrHeadersAreProtocolErrorsNamingWhatIsWrong() {
        Function<CmaKey, ByteBuf> rtr = k -> RndvHeaders.writeRtr(Unpooled.buffer(), 1, 2, 6000, k.pack());
        assertMalformed(rtr, RndvHeaders::readRtrKey, "RNDV_RTR", h -> h.setShortLE(28, 27),
                "remote key length is 27, but the header has 28 bytes after it");
        assertMalformed(rtr, RndvHeaders::readRtrKey, "RNDV_RTR", h -> h.setShortLE(28, 0xffff),
                "remote key length is 65535, expected 1 to 1024");
        assertMalformed(rtr, RndvHeaders::readRtrKey, "RNDV_RTR", h -> h.writeByte(0),
                "the header has 29 bytes after it (59 in all)");
        assertMalformed(rtr, RndvHeaders::readRtrKey, "RNDV_RTR", h -> h.writerIndex(25),
                "header is 25 bytes, expected 28 or more than 30");
        assertMalformed(rtr, RndvHeaders::readRtrKey, "RNDV_RTR", h -> h.writerIndex(44),
                "remote key length is 28, but the header has 14 bytes after it");
    }

    @Test
    void aKeyOfNoBytesOrTooManyIsNotWritten() {
        ByteBuf out = Unpooled.buffer();
        try {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> RndvHeaders.writeRts(out, 1, 2, 3, new byte[0]));
            assertTrue(e.getMessage().contains("a packed remote key of 0 bytes (1 to 1024)"), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> RndvHeaders.writeRtr(out, 1, 2, 3, new byte[1025]));
        } finally {
            out.release();
        }
    }

    private static void assertMalformed(Function<CmaKey, ByteBuf> write, Function<ByteBuf, ByteBuf> read, String what,
                                        Consumer<ByteBuf> damage, String expected) {
        ByteBuf h = write.apply(new CmaKey(1, 2, 0x1000, 6000));
        try {
            damage.accept(h);
            ProtocolException e = assertThrows(ProtocolException.class, () -> read.apply(h));
            assertTrue(e.getMessage().contains(expected), e.getMessage());
            assertTrue(e.getMessage().contains(what), e.getMessage());
        } finally {
            h.release();
        }
    }
}
