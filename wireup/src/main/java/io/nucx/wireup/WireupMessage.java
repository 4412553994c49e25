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

import java.nio.charset.StandardCharsets;

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
 *  REQUEST     | address length:u16 | packed worker address | ep length:u8 | p2p endpoint address |
 *              proof (none, or {@link WireupAuth#PROOF_LENGTH} bytes with NUCX_AUTH_TOKEN: nonce, time, HMAC) |
 *  REPLY       | p2p endpoint address (empty if none; at most 255 bytes) |
 *  EP_REMOVED  | UTF-8 reason, at most {@link #MAX_REASON} bytes (UCX sends none; ours names why) |
 *  LANE_ATTACH | lane:u8 | sender uuid:u64 | name length:u8 | transport name | proof (none, or with a key) |
 *  LANE_ACK, LANE_FAILED | lane:u8 | count:u64 |
 *  ACK, EP_CHECK: none
 * </pre>
 * UCX packs p2p endpoint addresses inside the worker address, per lane; nucx has one lane per endpoint, so its one
 * endpoint address sits beside the worker address.
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
                     byte[] epAddress, String reason, int lane, long value, byte[] proof) {

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

    static final byte[] NO_EP_ADDRESS = new byte[0];
    static final int MAX_EP_ADDRESS = 255;

    static WireupMessage request(ErrorMode mode, int connSn, long srcEpId, WorkerAddress address, byte[] epAddress) {
        return request(mode, false, connSn, srcEpId, address, epAddress, null);
    }

    /**
     * A REQUEST; {@code listened}: of an endpoint made through a listener, {@code connSn} being its token;
     * {@code proof}: {@link WireupAuth}'s, or none (null).
     */
    static WireupMessage request(ErrorMode mode, boolean listened, int connSn, long srcEpId, WorkerAddress address,
                                 byte[] epAddress, byte[] proof) {
        return new WireupMessage(REQUEST, mode.wire() | (listened ? LISTENED : 0), connSn, srcEpId, INVALID_EP_ID,
                address, epAddress, null, 0, 0, proof);
    }

    /** Whether this REQUEST's endpoint was made through a listener. */
    boolean listened() {
        return (errMode & LISTENED) != 0;
    }

    /** The error mode, without the {@link #LISTENED} flag. */
    ErrorMode errorMode() {
        return ErrorMode.fromWire(errMode & ~LISTENED);
    }

    static WireupMessage reply(ErrorMode mode, int connSn, long srcEpId, long dstEpId, byte[] epAddress) {
        return new WireupMessage(REPLY, mode.wire(), connSn, srcEpId, dstEpId, null, epAddress, null, 0, 0, null);
    }

    static WireupMessage ack(ErrorMode mode, int connSn, long srcEpId, long dstEpId) {
        return new WireupMessage(ACK, mode.wire(), connSn, srcEpId, dstEpId, null, null, null, 0, 0, null);
    }

    static WireupMessage epCheck(ErrorMode mode, long srcEpId, long dstEpId) {
        return new WireupMessage(EP_CHECK, mode.wire(), 0, srcEpId, dstEpId, null, null, null, 0, 0, null);
    }

    static WireupMessage epRemoved(long srcEpId, long dstEpId, String reason) {
        return new WireupMessage(EP_REMOVED, ErrorMode.NONE.wire(), 0, srcEpId, dstEpId, null, null, reason, 0, 0, null);
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
            byte[] ep = epAddress != null ? epAddress : NO_EP_ADDRESS;
            byte[] p = proof != null ? proof : NO_EP_ADDRESS;
            payload = Unpooled.wrappedBuffer(java.nio.ByteBuffer.allocate(2 + a.length + 1 + ep.length + p.length)
                    .order(java.nio.ByteOrder.LITTLE_ENDIAN).putShort((short) a.length).put(a).put((byte) ep.length)
                    .put(ep).put(p).flip());
        } else if (type == LANE_ATTACH) {
            byte[] name = reason.getBytes(StandardCharsets.US_ASCII);
            byte[] p = proof != null ? proof : NO_EP_ADDRESS;
            payload = Unpooled.wrappedBuffer(java.nio.ByteBuffer.allocate(LANE_PAYLOAD + 1 + name.length + p.length)
                    .order(java.nio.ByteOrder.LITTLE_ENDIAN).put((byte) lane).putLong(value).put((byte) name.length)
                    .put(name).put(p).flip());
        } else if (type == LANE_ACK || type == LANE_FAILED) {
            payload = Unpooled.wrappedBuffer(java.nio.ByteBuffer.allocate(LANE_PAYLOAD)
                    .order(java.nio.ByteOrder.LITTLE_ENDIAN).put((byte) lane).putLong(value).flip());
        } else if (type == REPLY && epAddress != null && epAddress.length > 0) {
            payload = Unpooled.wrappedBuffer(epAddress);
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
                int epLength = epAt < length ? payload.getUnsignedByte(payload.readerIndex() + epAt) : -1;
                if (epLength < 0 || epLength > length - epAt - 1) {
                    throw new ProtocolException("wireup REQUEST of " + length + " payload bytes announces a "
                            + epLength + "-byte endpoint address after its " + addressLength + "-byte worker address");
                }
                byte[] ep = new byte[epLength];
                payload.getBytes(payload.readerIndex() + epAt + 1, ep);
                int proofLength = length - epAt - 1 - epLength;
                if (proofLength != 0 && proofLength != WireupAuth.PROOF_LENGTH) {
                    throw new ProtocolException("wireup REQUEST with a " + proofLength + "-byte proof (expected none or "
                            + WireupAuth.PROOF_LENGTH + ")");
                }
                byte[] proof = null;
                if (proofLength > 0) {
                    proof = new byte[proofLength];
                    payload.getBytes(payload.readerIndex() + epAt + 1 + epLength, proof);
                }
                try {
                    return new WireupMessage(type, errMode, connSn, src, dst, WorkerAddress.decode(blob), ep, null,
                            0, 0, proof);
                } catch (InvalidAddressException e) {
                    throw new ProtocolException("wireup REQUEST carries a bad worker address: " + e.getMessage());
                }
            }
            case REPLY -> {
                if (length > MAX_EP_ADDRESS) {
                    throw new ProtocolException("wireup REPLY with a " + length + "-byte endpoint address (at most "
                            + MAX_EP_ADDRESS + ")");
                }
                byte[] ep = new byte[length];
                payload.getBytes(payload.readerIndex(), ep);
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
}
