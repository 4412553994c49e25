package io.nucx.wireup;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.nucx.ConnectionResetException;
import io.nucx.ErrorMode;
import io.nucx.InvalidAddressException;
import io.nucx.WorkerAddress;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.ProtocolException;
import io.nucx.transport.AmFrame;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * A wireup message (AM id {@link AmIds#WIREUP}), with UCX's header ({@code ucp_wireup_msg_t}, types numbered as
 * UCX's {@code UCP_WIREUP_MSG_*}).
 *
 * <pre>
 *  +--------+----------+-----------+------------------+------------------+
 *  |  type  | err mode |  conn sn  |  src ep id       |  dst ep id       |
 *  |   u8   |    u8    |    u16    |      u64         |      u64         |  + payload (by type)
 *  +--------+----------+-----------+------------------+------------------+
 * </pre>
 * Payload by type:
 * <pre>
 *  REQUEST     | address length:u16 | packed worker address | ep length:u16 | p2p endpoint addresses |
 *              proof (none, or {@link WireupAuth#PROOF_LENGTH} bytes with NUCX_AUTH_TOKEN: nonce, time, HMAC) |
 *  REPLY       | p2p endpoint addresses (empty if none) |
 *  EP_REMOVED  | UTF-8 reason, at most {@link #MAX_REASON} bytes (UCX sends none; ours names why) |
 *  LANE_ATTACH | lane:u8 | sender uuid:u64 | name length:u8 | transport name | proof (none, or with a key) |
 *  LANE_ACK, LANE_FAILED | lane:u8 | count:u64 |
 *  ACK, EP_CHECK: none
 *
 *  p2p endpoint addresses, one per transport connection that connects endpoint to endpoint (the AM lane, RMA and
 *  AMO lanes of rdma), at most {@link #MAX_P2P}:
 *  +----------+------------------------------------------------------------------------------+
 *  | count:u8 | count x { sender entry:u8 | receiver entry:u8 | length:u8 | endpoint address } |
 *  +----------+------------------------------------------------------------------------------+
 * </pre>
 * UCX packs p2p endpoint addresses inside the worker address, each with the receiver's lane index; nucx names each
 * connection by the two address entries (devices) it joins, as the sender sees them, so the receiver finds its own
 * side of each pair whatever order it lists them in.
 * <ul>
 *   <li>REQUEST: connecting side → acceptor, on the lane the connector opened; conn sn = the connector's number
 *       for this connection to the acceptor's uuid (0, 1, 2... per peer; see {@link EndpointMatch}), src = the
 *       connector's endpoint id, dst = none. With {@link #LISTENED} set in the err mode byte, the endpoint was made
 *       through a listener (UCX's client-server flow): conn sn is then the token the listener gave the client, and
 *       the acceptor hands the endpoint to the listener that waits for that token, never pairing or queueing it.</li>
 *   <li>REPLY: acceptor → connector; src = the acceptor's endpoint id, dst = the connector's, conn sn echoed. After
 *       it both sides know the other's id (keepalive needs it). In a simultaneous connect the REPLY goes on the
 *       replier's own lane, behind its own (ignored) REQUEST, so the peer always sees that REQUEST first.</li>
 *   <li>ACK: connector → acceptor, first frame on a p2p lane the connector dialled after the REPLY: both sides are
 *       connected; the acceptor switches its stub to that lane. src/dst as REQUEST/REPLY.</li>
 *   <li>EP_CHECK: keepalive probe; dst = the receiver's endpoint id. A receiver that does not know that id answers
 *       EP_REMOVED.</li>
 *   <li>EP_REMOVED: "the endpoint you talk to is gone": the answer to EP_CHECK for an unknown id, and what a
 *       gracefully closing endpoint sends last. The receiver's endpoint fails with {@link ConnectionResetException}.
 *       </li>
 * </ul>
 */
record WireupMessage(int type, int errMode, int connSn, long srcEpId, long dstEpId, WorkerAddress address,
                     List<P2pAddress> epAddresses, String reason, int lane, long value, byte[] proof) {

    /**
     * A transport endpoint's address for the peer, naming the pair of address entries its connection joins, as the
     * sender sees them: its own entry, then the receiver's.
     */
    record P2pAddress(int senderEntry, int receiverEntry, byte[] address) {
        P2pAddress {
            if (senderEntry < 0 || senderEntry > 255 || receiverEntry < 0 || receiverEntry > 255
                    || address.length == 0 || address.length > MAX_EP_ADDRESS) {
                throw new IllegalArgumentException("p2p address for entries " + senderEntry + "/" + receiverEntry
                        + " of " + address.length + " bytes (1 to " + MAX_EP_ADDRESS + ")");
            }
        }

        /** Whether it is the address of the receiver's connection from its entry {@code local} to our {@code remote}. */
        boolean joins(int local, int remote) {
            return receiverEntry == local && senderEntry == remote;
        }
    }

    static final int REQUEST = 1;
    static final int REPLY = 2;
    static final int ACK = 3;
    static final int EP_CHECK = 4;
    static final int EP_REMOVED = 5;
    /** nucx's own types, after UCX's 0-8: a lane joins an endpoint, lane confirmations, a lost lane's final count. */
    static final int LANE_ATTACH = 9;
    static final int LANE_ACK = 10;
    static final int LANE_FAILED = 11;
    /** Lane messages' payload before LANE_ATTACH's transport name: {@code lane:u8, value:u64}. */
    static final int LANE_PAYLOAD = 9;
    static final int MAX_TRANSPORT_NAME = 32;
    static final int HEADER_LENGTH = 20;
    /** No endpoint id known yet. */
    static final long INVALID_EP_ID = -1L;
    static final int MAX_REASON = 512;

    /** In a REQUEST's err mode byte: an endpoint made through a listener; conn sn is the listener's token. */
    static final int LISTENED = 0x80;

    static final List<P2pAddress> NO_EP_ADDRESS = List.of();
    static final int MAX_EP_ADDRESS = 255;
    static final int MAX_P2P = 16;
    private static final byte[] NO_PROOF = new byte[0];

    static WireupMessage request(ErrorMode mode, int connSn, long srcEpId, WorkerAddress address,
                                 List<P2pAddress> epAddresses) {
        return request(mode, false, connSn, srcEpId, address, epAddresses, null);
    }

    /**
     * A REQUEST; {@code listened}: of an endpoint made through a listener, {@code connSn} being its token;
     * {@code proof}: {@link WireupAuth}'s, or none (null).
     */
    static WireupMessage request(ErrorMode mode, boolean listened, int connSn, long srcEpId, WorkerAddress address,
                                 List<P2pAddress> epAddresses, byte[] proof) {
        return new WireupMessage(REQUEST, mode.wire() | (listened ? LISTENED : 0), connSn, srcEpId, INVALID_EP_ID,
                address, epAddresses, null, 0, 0, proof);
    }

    /** Whether this REQUEST's endpoint was made through a listener. */
    boolean listened() {
        return (errMode & LISTENED) != 0;
    }

    /** The error mode, without the {@link #LISTENED} flag. */
    ErrorMode errorMode() {
        return ErrorMode.fromWire(errMode & ~LISTENED);
    }

    static WireupMessage reply(ErrorMode mode, int connSn, long srcEpId, long dstEpId,
                               List<P2pAddress> epAddresses) {
        return new WireupMessage(REPLY, mode.wire(), connSn, srcEpId, dstEpId, null, epAddresses, null, 0, 0, null);
    }

    /** The p2p address of the receiver's connection from its entry {@code local} to our {@code remote}, or null. */
    byte[] epAddress(int local, int remote) {
        if (epAddresses != null) {
            for (P2pAddress a : epAddresses) {
                if (a.joins(local, remote)) {
                    return a.address();
                }
            }
        }
        return null;
    }

    static WireupMessage ack(ErrorMode mode, int connSn, long srcEpId, long dstEpId) {
        return new WireupMessage(ACK, mode.wire(), connSn, srcEpId, dstEpId, null, null, null, 0, 0, null);
    }

    static WireupMessage epCheck(ErrorMode mode, long srcEpId, long dstEpId) {
        return new WireupMessage(EP_CHECK, mode.wire(), 0, srcEpId, dstEpId, null, null, null, 0, 0, null);
    }

    static WireupMessage epRemoved(long srcEpId, long dstEpId, String reason) {
        return new WireupMessage(EP_REMOVED, ErrorMode.NONE.wire(), 0, srcEpId, dstEpId, null, null, reason, 0, 0,
                null);
    }

    static WireupMessage laneAttach(long srcEpId, long dstEpId, int lane, long uuid, String transport) {
        return laneAttach(srcEpId, dstEpId, lane, uuid, transport, null);
    }

    /** A LANE_ATTACH carrying {@code proof} ({@link WireupAuth#laneProof}), or none (null). */
    static WireupMessage laneAttach(long srcEpId, long dstEpId, int lane, long uuid, String transport, byte[] proof) {
        return new WireupMessage(LANE_ATTACH, 0, 0, srcEpId, dstEpId, null, null, transport, lane, uuid, proof);
    }

    static WireupMessage laneAck(long srcEpId, long dstEpId, int lane, long count) {
        return new WireupMessage(LANE_ACK, 0, 0, srcEpId, dstEpId, null, null, null, lane, count, null);
    }

    static WireupMessage laneFailed(long srcEpId, long dstEpId, int lane, long count) {
        return new WireupMessage(LANE_FAILED, 0, 0, srcEpId, dstEpId, null, null, null, lane, count, null);
    }

    static String typeName(int type) {
        return switch (type) {
            case REQUEST -> "REQUEST";
            case REPLY -> "REPLY";
            case ACK -> "ACK";
            case EP_CHECK -> "EP_CHECK";
            case EP_REMOVED -> "EP_REMOVED";
            case LANE_ATTACH -> "LANE_ATTACH";
            case LANE_ACK -> "LANE_ACK";
            case LANE_FAILED -> "LANE_FAILED";
            default -> "type " + type;
        };
    }

    AmFrame toFrame(ByteBufAllocator alloc) {
        ByteBuf header = alloc.buffer(HEADER_LENGTH).writeByte(type).writeByte(errMode).writeShortLE(connSn)
                .writeLongLE(srcEpId).writeLongLE(dstEpId);
        ByteBuf payload;
        if (type == REQUEST) {
            byte[] a = address.encode();
            byte[] ep = packAddresses(epAddresses);
            byte[] p = proof != null ? proof : NO_PROOF;
            payload = Unpooled.wrappedBuffer(ByteBuffer.allocate(2 + a.length + 2 + ep.length + p.length)
                    .order(ByteOrder.LITTLE_ENDIAN).putShort((short) a.length).put(a)
                    .putShort((short) ep.length).put(ep).put(p).flip());
        } else if (type == LANE_ATTACH) {
            byte[] name = reason.getBytes(StandardCharsets.US_ASCII);
            byte[] p = proof != null ? proof : NO_PROOF;
            payload = Unpooled.wrappedBuffer(ByteBuffer.allocate(LANE_PAYLOAD + 1 + name.length + p.length)
                    .order(ByteOrder.LITTLE_ENDIAN).put((byte) lane).putLong(value).put((byte) name.length)
                    .put(name).put(p).flip());
        } else if (type == LANE_ACK || type == LANE_FAILED) {
            payload = Unpooled.wrappedBuffer(ByteBuffer.allocate(LANE_PAYLOAD)
                    .order(ByteOrder.LITTLE_ENDIAN).put((byte) lane).putLong(value).flip());
        } else if (type == REPLY && epAddresses != null && !epAddresses.isEmpty()) {
            payload = Unpooled.wrappedBuffer(packAddresses(epAddresses));
        } else if (reason != null) {
            byte[] text = reason.getBytes(StandardCharsets.UTF_8);
            payload = Unpooled.wrappedBuffer(text, 0, Math.min(text.length, MAX_REASON));
        } else {
            payload = Unpooled.EMPTY_BUFFER;
        }
        return AmFrame.of(AmIds.WIREUP, 0, header, payload);
    }

    /** Parses a wireup frame (does not release it); an unknown type or a bad payload is a protocol error. */
    static WireupMessage from(AmFrame frame) {
        ByteBuf h = frame.header();
        if (h.readableBytes() != HEADER_LENGTH) {
            throw new ProtocolException("wireup header is " + h.readableBytes() + " bytes, expected " + HEADER_LENGTH);
        }
        int at = h.readerIndex();
        int type = h.getUnsignedByte(at);
        int errMode = h.getUnsignedByte(at + 1);
        int connSn = h.getUnsignedShortLE(at + 2);
        long src = h.getLongLE(at + 4);
        long dst = h.getLongLE(at + 12);
        ByteBuf payload = frame.payload();
        int length = payload.readableBytes();
        switch (type) {
            case REQUEST -> {
                int addressLength = length < 2 ? -1 : payload.getUnsignedShortLE(payload.readerIndex());
                if (addressLength < 0 || addressLength > length - 2) {
                    throw new ProtocolException("wireup REQUEST of " + length + " payload bytes announces a "
                            + addressLength + "-byte worker address");
                }
                byte[] blob = new byte[addressLength];
                payload.getBytes(payload.readerIndex() + 2, blob);
                int epAt = 2 + addressLength;
                int epLength = epAt + 2 <= length ? payload.getUnsignedShortLE(payload.readerIndex() + epAt) : -1;
                if (epLength < 0 || epLength > length - epAt - 2) {
                    throw new ProtocolException("wireup REQUEST of " + length + " payload bytes announces "
                            + epLength + " bytes of endpoint addresses after its " + addressLength
                            + "-byte worker address");
                }
                List<P2pAddress> ep = unpackAddresses(payload, payload.readerIndex() + epAt + 2, epLength, "REQUEST");
                int proofLength = length - epAt - 2 - epLength;
                if (proofLength != 0 && proofLength != WireupAuth.PROOF_LENGTH) {
                    throw new ProtocolException("wireup REQUEST with a " + proofLength + "-byte proof (expected none or "
                            + WireupAuth.PROOF_LENGTH + ")");
                }
                byte[] proof = null;
                if (proofLength > 0) {
                    proof = new byte[proofLength];
                    payload.getBytes(payload.readerIndex() + epAt + 2 + epLength, proof);
                }
                try {
                    return new WireupMessage(type, errMode, connSn, src, dst, WorkerAddress.decode(blob), ep, null,
                            0, 0, proof);
                } catch (InvalidAddressException e) {
                    throw new ProtocolException("wireup REQUEST carries a bad worker address: " + e.getMessage());
                }
            }
            case REPLY -> {
                List<P2pAddress> ep = unpackAddresses(payload, payload.readerIndex(), length, "REPLY");
                return new WireupMessage(type, errMode, connSn, src, dst, null, ep, null, 0, 0, null);
            }
            case ACK, EP_CHECK -> {
                if (length != 0) {
                    throw new ProtocolException("wireup " + typeName(type) + " with a " + length
                            + "-byte payload (expected none)");
                }
                return new WireupMessage(type, errMode, connSn, src, dst, null, null, null, 0, 0, null);
            }
            case EP_REMOVED -> {
                if (length > MAX_REASON) {
                    throw new ProtocolException("wireup EP_REMOVED reason of " + length + " bytes (at most "
                            + MAX_REASON + ")");
                }
                return new WireupMessage(type, errMode, connSn, src, dst, null, null,
                        payload.toString(payload.readerIndex(), length, StandardCharsets.UTF_8), 0, 0, null);
            }
            case LANE_ATTACH -> {
                int at0 = payload.readerIndex();
                int nameLength = length > LANE_PAYLOAD ? payload.getUnsignedByte(at0 + LANE_PAYLOAD) : -1;
                int proofLength = length - LANE_PAYLOAD - 1 - nameLength;
                if (nameLength < 1 || nameLength > MAX_TRANSPORT_NAME
                        || (proofLength != 0 && proofLength != WireupAuth.PROOF_LENGTH)) {
                    throw new ProtocolException("wireup LANE_ATTACH with a " + length + "-byte payload (expected "
                            + LANE_PAYLOAD + ", a transport name of 1-" + MAX_TRANSPORT_NAME + " and none or a "
                            + WireupAuth.PROOF_LENGTH + "-byte proof)");
                }
                String transport = payload.toString(at0 + LANE_PAYLOAD + 1, nameLength, StandardCharsets.US_ASCII);
                byte[] proof = null;
                if (proofLength > 0) {
                    proof = new byte[proofLength];
                    payload.getBytes(at0 + LANE_PAYLOAD + 1 + nameLength, proof);
                }
                return new WireupMessage(type, errMode, connSn, src, dst, null, null, transport,
                        payload.getUnsignedByte(at0), payload.getLongLE(at0 + 1), proof);
            }
            case LANE_ACK, LANE_FAILED -> {
                if (length != LANE_PAYLOAD) {
                    throw new ProtocolException("wireup " + typeName(type) + " with a " + length + "-byte payload "
                            + "(expected " + LANE_PAYLOAD + ")");
                }
                int at0 = payload.readerIndex();
                long value = payload.getLongLE(at0 + 1);
                if (value < 0) {
                    throw new ProtocolException("wireup " + typeName(type) + " counts " + value + " frames");
                }
                return new WireupMessage(type, errMode, connSn, src, dst, null, null, null,
                        payload.getUnsignedByte(at0), value, null);
            }
            default -> throw new ProtocolException("wireup message type " + type + " is not handled by this version");
        }
    }

    private static byte[] packAddresses(List<P2pAddress> addresses) {
        if (addresses == null || addresses.isEmpty()) {
            return new byte[0];
        }
        if (addresses.size() > MAX_P2P) {
            throw new IllegalArgumentException(addresses.size() + " p2p addresses, at most " + MAX_P2P);
        }
        int n = 1;
        for (P2pAddress a : addresses) {
            n += 3 + a.address().length;
        }
        ByteBuffer b = ByteBuffer.allocate(n).put((byte) addresses.size());
        for (P2pAddress a : addresses) {
            b.put((byte) a.senderEntry()).put((byte) a.receiverEntry()).put((byte) a.address().length)
                    .put(a.address());
        }
        return b.array();
    }

    /** The p2p addresses in {@code length} bytes at {@code at} (none if 0); malformed ones are a protocol error. */
    private static List<P2pAddress> unpackAddresses(ByteBuf in, int at, int length, String what) {
        if (length == 0) {
            return NO_EP_ADDRESS;
        }
        int end = at + length;
        int count = in.getUnsignedByte(at++);
        if (count == 0 || count > MAX_P2P) {
            throw new ProtocolException("wireup " + what + " with " + count + " p2p endpoint addresses (1 to "
                    + MAX_P2P + ")");
        }
        List<P2pAddress> out = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            if (end - at < 3) {
                throw new ProtocolException("wireup " + what + " ends inside p2p endpoint address " + i + " of "
                        + count);
            }
            int sender = in.getUnsignedByte(at);
            int receiver = in.getUnsignedByte(at + 1);
            int n = in.getUnsignedByte(at + 2);
            at += 3;
            if (n == 0 || n > end - at) {
                throw new ProtocolException("wireup " + what + " p2p endpoint address " + i + " claims " + n
                        + " bytes, " + (end - at) + " are left");
            }
            byte[] address = new byte[n];
            in.getBytes(at, address);
            at += n;
            for (P2pAddress o : out) {
                if (o.senderEntry() == sender && o.receiverEntry() == receiver) {
                    throw new ProtocolException("wireup " + what + " names the p2p connection of entries " + sender
                            + "/" + receiver + " twice");
                }
            }
            out.add(new P2pAddress(sender, receiver, address));
        }
        if (at != end) {
            throw new ProtocolException("wireup " + what + " has " + (end - at) + " bytes after its p2p endpoint "
                    + "addresses");
        }
        return List.copyOf(out);
    }
}
