package io.nucx.transport.rdma;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.HexFormat;

/**
 * What one RC queue pair tells its peer so that the peer can move its own queue pair to RTR and RTS (UCX's rc_verbs
 * endpoint address plus the parts of its device address an RC connection needs). Little-endian, version 1, 40 bytes:
 * <pre>
 *  0        1            2      3        4           6           7        8
 *  +--------+------------+------+--------+-----------+-----------+--------+
 *  | ver:u8 | linklayer  | port | mtu:u8 |  lid:u16  | gidIdx:u8 | flags  |
 *  +--------+------------+------+--------+-----------+-----------+--------+
 *  |            qpn:u32 (24 bits)        |         psn:u32 (24 bits)      |   8..16
 *  +-------------------------------------+--------------------------------+
 *  | rx credits:u16 | reserved:u16       |        max frame:u32           |  16..24
 *  +-------------------------------------+--------------------------------+
 *  |                          gid[16]                                     |  24..40
 *  +----------------------------------------------------------------------+
 *  |                       pd token:u64                                   |  40..48
 *  +----------------------------------------------------------------------+
 * </pre>
 * {@code linklayer} is IBV_LINK_LAYER_* (1 InfiniBand, 2 Ethernet/RoCE); {@code mtu} is enum ibv_mtu; {@code rx
 * credits} is how many receives this side keeps posted (the sender's initial credits); {@code max frame} the size of
 * each of those receive buffers; {@code pd token} a random number naming the peer's protection domain, which its
 * remote keys carry too, so a lane refuses keys of memory its peer cannot reach. Flag bit 0: address with the GRH
 * (RoCE always; InfiniBand across subnets).
 */
public record RdmaEndpointAddress(int linkLayer, int port, int mtu, int lid, int gidIndex, boolean global, int qpn,
                                  int psn, int rxCredits, int maxFrame, byte[] gid, long pdToken) {

    public static final int VERSION = 1;
    public static final int LENGTH = 48;

    public RdmaEndpointAddress {
        if (gid.length != 16) {
            throw new IllegalArgumentException("a GID has 16 bytes, not " + gid.length);
        }
        gid = gid.clone();
    }

    public byte[] pack() {
        return ByteBuffer.allocate(LENGTH).order(ByteOrder.LITTLE_ENDIAN)
                .put((byte) VERSION).put((byte) linkLayer).put((byte) port).put((byte) mtu)
                .putShort((short) lid).put((byte) gidIndex).put((byte) (global ? 1 : 0))
                .putInt(qpn & 0xffffff).putInt(psn & 0xffffff)
                .putShort((short) rxCredits).putShort((short) 0).putInt(maxFrame)
                .put(gid).putLong(pdToken).array();
    }

    /** Parses a packed address; anything malformed is an {@link IllegalArgumentException} naming what. */
    public static RdmaEndpointAddress unpack(byte[] b) {
        if (b.length != LENGTH) {
            throw new IllegalArgumentException("rdma endpoint address of " + b.length + " bytes, expected " + LENGTH);
        }
        ByteBuffer in = ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
        int version = in.get() & 0xff;
        if (version != VERSION) {
            throw new IllegalArgumentException("rdma endpoint address version " + version + ", expected " + VERSION);
        }
        int linkLayer = in.get() & 0xff;
        int port = in.get() & 0xff;
        int mtu = in.get() & 0xff;
        int lid = in.getShort() & 0xffff;
        int gidIndex = in.get() & 0xff;
        boolean global = (in.get() & 1) != 0;
        int qpn = in.getInt();
        int psn = in.getInt();
        int credits = in.getShort() & 0xffff;
        in.getShort();
        int maxFrame = in.getInt();
        byte[] gid = new byte[16];
        in.get(gid);
        long pdToken = in.getLong();
        if (linkLayer != IbvPortAttr.IBV_LINK_LAYER_INFINIBAND && linkLayer != IbvPortAttr.IBV_LINK_LAYER_ETHERNET) {
            throw new IllegalArgumentException("rdma endpoint address with link layer " + linkLayer);
        }
        if (mtu < 1 || mtu > 5 || port == 0 || qpn >>> 24 != 0 || psn >>> 24 != 0 || credits < 2
                || maxFrame < RdmaFrame.HEADER_LENGTH + 1) {
            throw new IllegalArgumentException("malformed rdma endpoint address: mtu " + mtu + ", port " + port
                    + ", qpn " + qpn + ", psn " + psn + ", credits " + credits + ", max frame " + maxFrame);
        }
        return new RdmaEndpointAddress(linkLayer, port, mtu, lid, gidIndex, global, qpn, psn, credits, maxFrame, gid,
                pdToken);
    }

    @Override
    public String toString() {
        return "qpn 0x" + Integer.toHexString(qpn) + " lid " + lid + " gid " + HexFormat.of().formatHex(gid)
                + " mtu " + IbvPortAttr.mtuBytes(mtu) + (linkLayer == IbvPortAttr.IBV_LINK_LAYER_ETHERNET ? " RoCE"
                : " IB");
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof RdmaEndpointAddress a && Arrays.equals(pack(), a.pack());
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(pack());
    }
}
