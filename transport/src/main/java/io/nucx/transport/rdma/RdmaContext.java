package io.nucx.transport.rdma;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

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
    static final int GID_INDEX = 0;

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
    final byte[] gid = new byte[IbvGid.SIZE];
    private boolean closed;

    private RdmaContext(Verbs verbs, String deviceName, MemorySegment ctx, MemorySegment pd, MemorySegment devAttr,
                        MemorySegment portAttr, MemorySegment gidSeg) {
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
    }

    /** Lists the device names {@code ibv_get_device_list} returns; the exception says why there are none. */
    static java.util.List<String> deviceNames(Verbs verbs) throws VerbsException {
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
                java.util.List<String> names = new java.util.ArrayList<>(n);
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
            if (rc == 0 && (int) verbs.queryGid.invokeExact(cs, ctx, (byte) PORT, GID_INDEX, gid) != 0) {
                rc = Verbs.errno(cs);
            }
            MemorySegment pd = rc == 0 ? (MemorySegment) verbs.allocPd.invokeExact(cs, ctx) : MemorySegment.NULL;
            if (rc != 0 || pd.equals(MemorySegment.NULL)) {
                int errno = rc != 0 ? rc : Verbs.errno(cs);
                int ignored = (int) verbs.closeDevice.invokeExact(ctx);
                throw new VerbsException((rc != 0 ? "ibv_query_device/port/gid(" : "ibv_alloc_pd(") + name + ")",
                        errno);
            }
            return new RdmaContext(verbs, name, ctx, pd, devAttr, portAttr, gid);
        } catch (VerbsException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("verbs downcall failed", t);
        }
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
