package io.nucx.wireup;

import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.nucx.ErrorMode;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.ProtocolException;
import io.nucx.transport.AmFrame;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** REQUEST / REPLY / ACK layouts: conn_sn, ids, worker address and p2p endpoint address survive the trip. */
class WireupMessageTest {

    private static WireupMessage roundTrip(WireupMessage m) {
        AmFrame f = m.toFrame(ByteBufAllocator.DEFAULT);
        try {
            return WireupMessage.from(f);
        } finally {
            f.release();
        }
    }

    @Test
    void requestCarriesConnSnIdsAddressAndEndpointAddresses() {
        byte[] ep = {1, 2, 3, 4, 5, 6, 7, 8};
        byte[] rma = new byte[48];
        Arrays.fill(rma, (byte) 7);
        WireupMessage back = roundTrip(WireupMessage.request(ErrorMode.PEER, 65535, 42, WorkerAddressTest.sample(),
                List.of(new WireupMessage.P2pAddress(0, 2, ep), new WireupMessage.P2pAddress(1, 3, rma))));
        assertEquals(WireupMessage.REQUEST, back.type());
        assertEquals(65535, back.connSn());
        assertEquals(42, back.srcEpId());
        assertEquals(WireupMessage.INVALID_EP_ID, back.dstEpId());
        assertEquals(WorkerAddressTest.sample().uuid(), back.address().uuid());
        // the receiver looks each up from its side: its entry, then the sender's
        assertArrayEquals(ep, back.epAddress(2, 0));
        assertArrayEquals(rma, back.epAddress(3, 1));
        assertNull(back.epAddress(0, 2));
        assertEquals(0, roundTrip(WireupMessage.request(ErrorMode.NONE, 0, 1, WorkerAddressTest.sample(),
                WireupMessage.NO_EP_ADDRESS)).epAddresses().size());
    }

    /**
     * The listened flag, the p2p addresses and the auth proof travel together; the addresses' block may pass 255
     * bytes (three rdma connections per device pair), so its length is a u16.
     */
    @Test
    void requestCarriesListenedFlagEndpointAddressesBeyond255BytesAndTheProof() {
        List<WireupMessage.P2pAddress> eps = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            byte[] a = new byte[WireupMessage.MAX_EP_ADDRESS];
            Arrays.fill(a, (byte) i);
            eps.add(new WireupMessage.P2pAddress(i, i + 1, a));
        }
        byte[] proof = new byte[WireupAuth.PROOF_LENGTH];
        Arrays.fill(proof, (byte) 0x5a);
        WireupMessage back = roundTrip(WireupMessage.request(ErrorMode.FAILOVER, true, 17, 42,
                WorkerAddressTest.sample(), eps, proof));
        assertTrue(back.listened());
        assertEquals(ErrorMode.FAILOVER, back.errorMode());
        assertEquals(17, back.connSn());
        assertEquals(3, back.epAddresses().size());
        for (int i = 0; i < 3; i++) {
            assertArrayEquals(eps.get(i).address(), back.epAddress(i + 1, i));
        }
        assertArrayEquals(proof, back.proof());
        assertNull(roundTrip(WireupMessage.request(ErrorMode.PEER, false, 1, 2, WorkerAddressTest.sample(),
                eps, null)).proof());
    }

    @Test
    void replyCarriesTheEndpointAddressesAndAckNothing() {
        WireupMessage reply = roundTrip(WireupMessage.reply(ErrorMode.PEER, 3, 7, 9,
                List.of(new WireupMessage.P2pAddress(1, 0, new byte[] {9, 9}))));
        assertEquals(3, reply.connSn());
        assertEquals(7, reply.srcEpId());
        assertEquals(9, reply.dstEpId());
        assertArrayEquals(new byte[] {9, 9}, reply.epAddress(0, 1));
        WireupMessage ack = roundTrip(WireupMessage.ack(ErrorMode.PEER, 3, 9, 7));
        assertEquals(WireupMessage.ACK, ack.type());
        assertEquals(9, ack.srcEpId());
        assertEquals(7, ack.dstEpId());
    }

    /** The p2p address list: a count out of range, an address running past the end, a pair twice, trailing bytes. */
    @Test
    void malformedEndpointAddressListsAreProtocolErrors() {
        for (byte[] bad : new byte[][] {{0}, {17}, {1, 0, 0, 5, 1, 2}, {2, 0, 0, 1, 9, 0, 0, 1, 9}, {1, 0, 0, 1, 9, 4},
                {1, 0, 0, 0}}) {
            AmFrame f = AmFrame.of(AmIds.WIREUP, 0, Unpooled.buffer(WireupMessage.HEADER_LENGTH).writeByte(
                    WireupMessage.REPLY).writeByte(0).writeShortLE(0).writeLongLE(1).writeLongLE(2),
                    Unpooled.wrappedBuffer(bad));
            try {
                ProtocolException e = assertThrows(ProtocolException.class, () -> WireupMessage.from(f),
                        () -> Arrays.toString(bad));
                assertTrue(e.getMessage().contains("p2p"), e.getMessage());
            } finally {
                f.release();
            }
        }
    }

    @Test
    void aRequestWhoseAddressLengthOverrunsThePayloadIsAProtocolError() {
        AmFrame f = AmFrame.of(AmIds.WIREUP, 0, Unpooled.buffer(WireupMessage.HEADER_LENGTH).writeByte(
                WireupMessage.REQUEST).writeByte(0).writeShortLE(0).writeLongLE(1).writeLongLE(-1),
                Unpooled.buffer(4).writeShortLE(500).writeShort(0));
        try {
            ProtocolException e = assertThrows(ProtocolException.class, () -> WireupMessage.from(f));
            assertTrue(e.getMessage().contains("500-byte worker address"), e.getMessage());
        } finally {
            f.release();
        }
    }

    @Test
    void anAckWithAPayloadIsAProtocolError() {
        AmFrame f = AmFrame.of(AmIds.WIREUP, 0, Unpooled.buffer(WireupMessage.HEADER_LENGTH).writeByte(
                WireupMessage.ACK).writeByte(0).writeShortLE(0).writeLongLE(1).writeLongLE(2),
                Unpooled.buffer(1).writeByte(1));
        try {
            ProtocolException e = assertThrows(ProtocolException.class, () -> WireupMessage.from(f));
            assertTrue(e.getMessage().contains("ACK with a 1-byte payload"), e.getMessage());
        } finally {
            f.release();
        }
    }

    @Test
    void laneMessagesCarryLaneAndCountOrUuidAndTransport() {
        WireupMessage attach = roundTrip(WireupMessage.laneAttach(3, 4, 1, 0xfeedL, "tcp"));
        assertEquals(WireupMessage.LANE_ATTACH, attach.type());
        assertEquals(1, attach.lane());
        assertEquals(0xfeedL, attach.value());
        assertEquals("tcp", attach.reason());
        assertEquals(3, attach.srcEpId());
        assertEquals(4, attach.dstEpId());
        WireupMessage ack = roundTrip(WireupMessage.laneAck(3, 4, 2, 1L << 40));
        assertEquals(WireupMessage.LANE_ACK, ack.type());
        assertEquals(2, ack.lane());
        assertEquals(1L << 40, ack.value());
        WireupMessage lost = roundTrip(WireupMessage.laneFailed(3, 4, 0, 17));
        assertEquals(WireupMessage.LANE_FAILED, lost.type());
        assertEquals(17, lost.value());
    }

    @Test
    void malformedLaneMessagesAreProtocolErrorsNamingTheValues() {
        for (int[] c : new int[][] {{WireupMessage.LANE_ACK, 8}, {WireupMessage.LANE_ACK, 12},
                {WireupMessage.LANE_ATTACH, 9}, {WireupMessage.LANE_ATTACH, 9 + 33}}) {
            AmFrame f = AmFrame.of(AmIds.WIREUP, 0, Unpooled.buffer(WireupMessage.HEADER_LENGTH).writeByte(c[0])
                    .writeByte(0).writeShortLE(0).writeLongLE(1).writeLongLE(2),
                    Unpooled.wrappedBuffer(new byte[c[1]]));
            try {
                ProtocolException e = assertThrows(ProtocolException.class, () -> WireupMessage.from(f));
                assertTrue(e.getMessage().contains(c[1] + "-byte payload"), e.getMessage());
            } finally {
                f.release();
            }
        }
        AmFrame negative = AmFrame.of(AmIds.WIREUP, 0, Unpooled.buffer(WireupMessage.HEADER_LENGTH).writeByte(
                WireupMessage.LANE_FAILED).writeByte(0).writeShortLE(0).writeLongLE(1).writeLongLE(2),
                Unpooled.buffer(9).writeByte(0).writeLongLE(-5));
        try {
            ProtocolException e = assertThrows(ProtocolException.class, () -> WireupMessage.from(negative));
            assertTrue(e.getMessage().contains("-5 frames"), e.getMessage());
        } finally {
            negative.release();
        }
    }
}
