package io.nucx.transport.rdma;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * An opened device: its {@code ibv_context}, one protection domain, and what the device and its port 1 said about
 * themselves. Control path only (any thread, never the data path); closed once.
 */
final class RdmaContext implements AutoCloseable {

    static final int PORT = 1;

    final Verbs verbs;
    final String deviceName;
    final MemorySegment ctx;
    final MemorySegment pd;
    /** ibv_device_attr and port attributes, read once. */
    final int maxQpWr;
    final int maxSge;
    final int maxCqe;
    final int maxQpRdAtom;
    final int maxQpInitRdAtom;
    final int atomicCap;
    final long maxMrSize;
    final String firmware;
    final int portState;
    final int activeMtu;
    final int lid;
    final int linkLayer;
    final long maxMsgSize;
    final int activeWidth;
    final int activeSpeed;
    /** The source GID this side uses and its index: 0 on InfiniBand; on RoCE the first RoCE v2 GID if the library
     *  tells GID types, else 0. */
    final byte[] gid = new byte[IbvGid.SIZE];
    final int gidIndex;
    private boolean closed;

    private RdmaContext(Verbs verbs, String deviceName, MemorySegment ctx, MemorySegment pd, MemorySegment devAttr,
                        MemorySegment portAttr, MemorySegment gidSeg, int gidIndex) {
        this.verbs = verbs;
        this.deviceName = deviceName;
        this.ctx = ctx;
        this.pd = pd;
        maxQpWr = devAttr.get(JAVA_INT, IbvDeviceAttr.MAX_QP_WR);
        maxSge = devAttr.get(JAVA_INT, IbvDeviceAttr.MAX_SGE);
        maxCqe = devAttr.get(JAVA_INT, IbvDeviceAttr.MAX_CQE);
        maxQpRdAtom = devAttr.get(JAVA_INT, IbvDeviceAttr.MAX_QP_RD_ATOM);
        maxQpInitRdAtom = devAttr.get(JAVA_INT, IbvDeviceAttr.MAX_QP_INIT_RD_ATOM);
        atomicCap = devAttr.get(JAVA_INT, IbvDeviceAttr.ATOMIC_CAP);
        maxMrSize = devAttr.get(JAVA_LONG, IbvDeviceAttr.MAX_MR_SIZE);
        firmware = IbvDeviceAttr.fwVer(devAttr);
        portState = portAttr.get(JAVA_INT, IbvPortAttr.STATE);
        activeMtu = portAttr.get(JAVA_INT, IbvPortAttr.ACTIVE_MTU);
        lid = Short.toUnsignedInt(portAttr.get(JAVA_SHORT, IbvPortAttr.LID));
        linkLayer = portAttr.get(JAVA_BYTE, IbvPortAttr.LINK_LAYER);
        maxMsgSize = Integer.toUnsignedLong(portAttr.get(JAVA_INT, IbvPortAttr.MAX_MSG_SZ));
        activeWidth = portAttr.get(JAVA_BYTE, IbvPortAttr.ACTIVE_WIDTH);
        activeSpeed = portAttr.get(JAVA_BYTE, IbvPortAttr.ACTIVE_SPEED);
        MemorySegment.copy(gidSeg, JAVA_BYTE, 0, gid, 0, IbvGid.SIZE);
        this.gidIndex = gidIndex;
    }

    /** Lists the device names {@code ibv_get_device_list} returns; the exception says why there are none. */
    static List<String> deviceNames(Verbs verbs) throws VerbsException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment cs = Verbs.newCaptureState(arena);
            MemorySegment num = arena.allocate(JAVA_INT);
            MemorySegment list = (MemorySegment) verbs.getDeviceList.invokeExact(cs, num);
            if (list.equals(MemorySegment.NULL)) {
                int errno = Verbs.errno(cs);
                throw new VerbsException("ibv_get_device_list", errno);
            }
            try {
                int n = num.get(JAVA_INT, 0);
                List<String> names = new ArrayList<>(n);
                MemorySegment array = list.reinterpret(8L * (n + 1));
                for (int i = 0; i < n; i++) {
                    names.add(IbvDevice.name(array.getAtIndex(ADDRESS, i)));
                }
                return names;
            } finally {
                verbs.freeDeviceList.invokeExact(list);
            }
        } catch (VerbsException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("ibv_get_device_list downcall failed", t);
        }
    }

    /** Opens device {@code name}, allocates a protection domain and reads device, port 1 and GID 0 attributes. */
    static RdmaContext open(Verbs verbs, String name) throws VerbsException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment cs = Verbs.newCaptureState(arena);
            MemorySegment num = arena.allocate(JAVA_INT);
            MemorySegment list = (MemorySegment) verbs.getDeviceList.invokeExact(cs, num);
            if (list.equals(MemorySegment.NULL)) {
                throw new VerbsException("ibv_get_device_list", Verbs.errno(cs));
            }
            MemorySegment ctx = MemorySegment.NULL;
            try {
                int n = num.get(JAVA_INT, 0);
                MemorySegment array = list.reinterpret(8L * (n + 1));
                for (int i = 0; i < n; i++) {
                    MemorySegment dev = array.getAtIndex(ADDRESS, i);
                    if (IbvDevice.name(dev).equals(name)) {
                        ctx = (MemorySegment) verbs.openDevice.invokeExact(cs, dev);
                        if (ctx.equals(MemorySegment.NULL)) {
                            throw new VerbsException("ibv_open_device(" + name + ")", Verbs.errno(cs));
                        }
                        break;
                    }
                }
            } finally {
                verbs.freeDeviceList.invokeExact(list);
            }
            if (ctx.equals(MemorySegment.NULL)) {
                throw new VerbsException("no RDMA device named " + name);
            }
            MemorySegment devAttr = arena.allocate(IbvDeviceAttr.LAYOUT);
            MemorySegment portAttr = arena.allocate(IbvPortAttr.LAYOUT);
            MemorySegment gid = arena.allocate(IbvGid.LAYOUT);
            int rc = (int) verbs.queryDevice.invokeExact(ctx, devAttr);
            if (rc == 0) {
                rc = (int) verbs.queryPort.invokeExact(ctx, (byte) PORT, portAttr);
            }
            int gidIndex = rc == 0 ? sourceGidIndex(verbs, ctx, portAttr, arena) : 0;
            if (rc == 0 && (int) verbs.queryGid.invokeExact(cs, ctx, (byte) PORT, gidIndex, gid) != 0) {
                rc = Verbs.errno(cs);
            }
            MemorySegment pd = rc == 0 ? (MemorySegment) verbs.allocPd.invokeExact(cs, ctx) : MemorySegment.NULL;
            if (rc != 0 || pd.equals(MemorySegment.NULL)) {
                int errno = rc != 0 ? rc : Verbs.errno(cs);
                int ignored = (int) verbs.closeDevice.invokeExact(ctx);
                throw new VerbsException((rc != 0 ? "ibv_query_device/port/gid(" : "ibv_alloc_pd(") + name + ")",
                        errno);
            }
            return new RdmaContext(verbs, name, ctx, pd, devAttr, portAttr, gid, gidIndex);
        } catch (VerbsException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("verbs downcall failed", t);
        }
    }

    /**
     * The GID index this side sends from: 0 on InfiniBand (the port's GID; LIDs route); on RoCE the first entry whose
     * type is RoCE v2 (routable over IP, what RoCE fabrics run), or 0 when the library cannot tell types
     * (rdma-core before 32) or the table has none.
     */
    private static int sourceGidIndex(Verbs verbs, MemorySegment ctx, MemorySegment portAttr, Arena arena)
            throws Throwable {
        if (portAttr.get(JAVA_BYTE, IbvPortAttr.LINK_LAYER) != IbvPortAttr.IBV_LINK_LAYER_ETHERNET
                || verbs.queryGidEx == null) {
            return 0;
        }
        int entries = portAttr.get(JAVA_INT, IbvPortAttr.GID_TBL_LEN);
        MemorySegment entry = arena.allocate(IbvGidEntry.LAYOUT);
        for (int i = 0; i < entries; i++) {
            int rc = (int) verbs.queryGidEx.invokeExact(ctx, PORT, i, entry, 0, IbvGidEntry.LAYOUT.byteSize());
            if (rc == 0 && entry.get(JAVA_INT, IbvGidEntry.GID_TYPE) == IbvGidEntry.IBV_GID_TYPE_ROCE_V2) {
                return i;
            }
        }
        return 0;
    }

    boolean portActive() {
        return portState == IbvPortAttr.IBV_PORT_ACTIVE;
    }

    /** The port's data rate in bytes/second from width x speed (IB encodings); 0 when unknown. */
    double bandwidth() {
        int lanes = switch (activeWidth) {
            case 1 -> 1;
            case 2 -> 4;
            case 4 -> 8;
            case 8 -> 12;
            case 16 -> 2;
            default -> 0;
        };
        double gbpsPerLane = switch (activeSpeed) {
            case 1 -> 2.5 * 0.8;
            case 2 -> 5 * 0.8;
            case 4, 8 -> 10 * 0.8;
            case 16 -> 14.0625 * 64 / 66;
            case 32 -> 25.78125 * 64 / 66;
            case 64 -> 50 * 64 / 66;
            case 128 -> 100 * 64 / 66;
            default -> 0;
        };
        return lanes * gbpsPerLane * 1e9 / 8;
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            int a = (int) verbs.deallocPd.invokeExact(pd);
            int b = (int) verbs.closeDevice.invokeExact(ctx);
        } catch (Throwable t) {
            throw new IllegalStateException("verbs downcall failed", t);
        }
    }

    @Override
    public String toString() {
        return deviceName + ":" + PORT;
    }
}
