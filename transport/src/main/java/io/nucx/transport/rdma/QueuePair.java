package io.nucx.transport.rdma;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * One RC queue pair with its own completion queue (on the iface's completion channel), and the four data-path verbs
 * called through the provider's {@code ibv_context.ops} pointers, which are read once here. The work request, SGE,
 * bad-request slot and completion array are flyweights over memory allocated once; posting or polling allocates
 * nothing. Data path on the channel's event loop only.
 *
 * <p>The RC transitions (man ibv_modify_qp) with the masks of {@link IbvQpAttr}:
 * RESET → INIT (pkey 0, port, access: local write, remote read/write/atomic), INIT → RTR (the peer's QPN, PSN, LID,
 * GID, path MTU; responder resources; RNR timer), RTR → RTS (our PSN, ACK timeout, retry counts, initiator depth).
 */
final class QueuePair {

    /** What posting on a destroyed queue pair returns, as a provider answers for a queue pair in a bad state. */
    static final int EINVAL = 22;

    /** Completions one poll takes at most. */
    static final int POLL_BATCH = 32;
    /** 4.096 us x 2^14 = 67 ms ACK timeout, 7 retries (rdma-core's rc_pingpong); 7 RNR retries = forever. */
    static final int TIMEOUT = 14;
    static final int RETRY_CNT = 7;
    static final int RNR_RETRY = 7;
    /** 0.64 ms (IB encoding 12). Credits keep RNR NAKs away; this only bounds the wait if one happens. */
    static final int MIN_RNR_TIMER = 12;
    static final int MAX_RD_ATOMIC = 16;
    static final int MAX_INLINE = 64;

    private final RdmaContext rc;
    final MemorySegment cq;
    final MemorySegment qp;
    final int qpn;
    private final MemorySegment postSendFn;
    private final MemorySegment postRecvFn;
    private final MemorySegment pollCqFn;
    private final MemorySegment reqNotifyFn;
    private final MemorySegment sendWr;
    private final MemorySegment sendSge;
    private final MemorySegment recvWr;
    private final MemorySegment recvSge;
    private final MemorySegment badWr;
    final MemorySegment wcs;
    private boolean destroyed;
    private boolean cqDestroyed;

    private QueuePair(RdmaContext rc, MemorySegment cq, MemorySegment qp, Arena arena) {
        this.rc = rc;
        this.cq = cq.reinterpret(IbvCq.LAYOUT.byteSize());
        this.qp = qp.reinterpret(IbvQp.LAYOUT.byteSize());
        this.qpn = IbvQp.qpNum(qp);
        // what verbs.h's inlines do: qp->context->ops.post_send, cq->context->ops.poll_cq ...
        MemorySegment qpCtx = this.qp.get(ADDRESS, IbvQp.CONTEXT);
        MemorySegment cqCtx = this.cq.get(ADDRESS, IbvCq.CONTEXT);
        postSendFn = IbvContext.op(qpCtx, IbvContext.POST_SEND);
        postRecvFn = IbvContext.op(qpCtx, IbvContext.POST_RECV);
        pollCqFn = IbvContext.op(cqCtx, IbvContext.POLL_CQ);
        reqNotifyFn = IbvContext.op(cqCtx, IbvContext.REQ_NOTIFY_CQ);
        sendWr = arena.allocate(IbvSendWr.LAYOUT);
        sendSge = arena.allocate(IbvSge.LAYOUT);
        recvWr = arena.allocate(IbvRecvWr.LAYOUT);
        recvSge = arena.allocate(IbvSge.LAYOUT);
        badWr = arena.allocate(ADDRESS);
        wcs = arena.allocate(IbvWc.LAYOUT, POLL_BATCH);
    }

    /** Creates the CQ and an RC QP (state RESET), then moves it to INIT. */
    static QueuePair create(RdmaContext rc, MemorySegment compChannel, int sendDepth, int recvDepth, Arena arena)
            throws VerbsException {
        Verbs v = rc.verbs;
        try (Arena tmp = Arena.ofConfined()) {
            MemorySegment cs = Verbs.newCaptureState(tmp);
            MemorySegment cq = (MemorySegment) v.createCq.invokeExact(cs, rc.ctx, sendDepth + recvDepth,
                    MemorySegment.NULL, compChannel, 0);
            if (cq.equals(MemorySegment.NULL)) {
                throw new VerbsException("ibv_create_cq(" + rc + ", " + (sendDepth + recvDepth) + " entries)",
                        Verbs.errno(cs));
            }
            MemorySegment init = tmp.allocate(IbvQpInitAttr.LAYOUT);
            init.set(ADDRESS, IbvQpInitAttr.SEND_CQ, cq);
            init.set(ADDRESS, IbvQpInitAttr.RECV_CQ, cq);
            init.set(JAVA_INT, IbvQpInitAttr.MAX_SEND_WR, sendDepth);
            init.set(JAVA_INT, IbvQpInitAttr.MAX_RECV_WR, recvDepth);
            init.set(JAVA_INT, IbvQpInitAttr.MAX_SEND_SGE, 1);
            init.set(JAVA_INT, IbvQpInitAttr.MAX_RECV_SGE, 1);
            init.set(JAVA_INT, IbvQpInitAttr.MAX_INLINE_DATA, MAX_INLINE);
            init.set(JAVA_INT, IbvQpInitAttr.QP_TYPE, IbvQpInitAttr.IBV_QPT_RC);
            init.set(JAVA_INT, IbvQpInitAttr.SQ_SIG_ALL, 0);
            MemorySegment qp = (MemorySegment) v.createQp.invokeExact(cs, rc.pd, init);
            if (qp.equals(MemorySegment.NULL)) {
                int errno = Verbs.errno(cs);
                int ignored = (int) v.destroyCq.invokeExact(cq);
                throw new VerbsException("ibv_create_qp(" + rc + ", RC, " + sendDepth + "/" + recvDepth + " WRs)",
                        errno);
            }
            QueuePair p = new QueuePair(rc, cq, qp, arena);
            MemorySegment attr = tmp.allocate(IbvQpAttr.LAYOUT);
            attr.set(JAVA_INT, IbvQpAttr.QP_STATE, IbvQp.IBV_QPS_INIT);
            attr.set(JAVA_SHORT, IbvQpAttr.PKEY_INDEX, (short) 0);
            IbvQpAttr.setByte(attr, IbvQpAttr.PORT_NUM, RdmaContext.PORT);
            attr.set(JAVA_INT, IbvQpAttr.QP_ACCESS_FLAGS, IbvMr.IBV_ACCESS_LOCAL_WRITE | IbvMr.IBV_ACCESS_REMOTE_WRITE
                    | IbvMr.IBV_ACCESS_REMOTE_READ | IbvMr.IBV_ACCESS_REMOTE_ATOMIC);
            p.modify(attr, IbvQpAttr.MASK_INIT, "RESET->INIT");
            return p;
        } catch (VerbsException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("verbs downcall failed", t);
        }
    }

    private void modify(MemorySegment attr, int mask, String what) throws VerbsException {
        int rc;
        try {
            rc = (int) this.rc.verbs.modifyQp.invokeExact(qp, attr, mask);
        } catch (Throwable t) {
            throw new IllegalStateException("ibv_modify_qp downcall failed", t);
        }
        if (rc != 0) {
            throw new VerbsException("ibv_modify_qp(qpn 0x" + Integer.toHexString(qpn) + ", " + what + ", mask 0x"
                    + Integer.toHexString(mask) + ")", rc);
        }
    }

    /** INIT → RTR → RTS towards {@code remote}; {@code psn} is our send PSN (the one our address announced). */
    void connect(RdmaEndpointAddress remote, int psn, int localGidIndex) throws VerbsException {
        try (Arena tmp = Arena.ofConfined()) {
            MemorySegment a = tmp.allocate(IbvQpAttr.LAYOUT);
            a.set(JAVA_INT, IbvQpAttr.QP_STATE, IbvQp.IBV_QPS_RTR);
            a.set(JAVA_INT, IbvQpAttr.PATH_MTU, Math.min(remote.mtu(), rc.activeMtu));
            a.set(JAVA_INT, IbvQpAttr.DEST_QP_NUM, remote.qpn());
            a.set(JAVA_INT, IbvQpAttr.RQ_PSN, remote.psn());
            IbvQpAttr.setByte(a, IbvQpAttr.MAX_DEST_RD_ATOMIC, Math.min(MAX_RD_ATOMIC, rc.maxQpRdAtom));
            IbvQpAttr.setByte(a, IbvQpAttr.MIN_RNR_TIMER, MIN_RNR_TIMER);
            a.set(JAVA_SHORT, IbvQpAttr.AH_DLID, (short) remote.lid());
            IbvQpAttr.setByte(a, IbvQpAttr.AH_SL, 0);
            IbvQpAttr.setByte(a, IbvQpAttr.AH_PORT_NUM, RdmaContext.PORT);
            boolean global = remote.global() || remote.linkLayer() == IbvPortAttr.IBV_LINK_LAYER_ETHERNET;
            IbvQpAttr.setByte(a, IbvQpAttr.AH_IS_GLOBAL, global ? 1 : 0);
            if (global) {
                MemorySegment.copy(remote.gid(), 0, a, JAVA_BYTE, IbvQpAttr.AH_DGID, 16);
                IbvQpAttr.setByte(a, IbvQpAttr.AH_SGID_INDEX, localGidIndex);
                IbvQpAttr.setByte(a, IbvQpAttr.AH_HOP_LIMIT, 64);
            }
            modify(a, IbvQpAttr.MASK_RTR, "INIT->RTR");
            a.fill((byte) 0);
            a.set(JAVA_INT, IbvQpAttr.QP_STATE, IbvQp.IBV_QPS_RTS);
            IbvQpAttr.setByte(a, IbvQpAttr.TIMEOUT, TIMEOUT);
            IbvQpAttr.setByte(a, IbvQpAttr.RETRY_CNT, RETRY_CNT);
            IbvQpAttr.setByte(a, IbvQpAttr.RNR_RETRY, RNR_RETRY);
            a.set(JAVA_INT, IbvQpAttr.SQ_PSN, psn);
            IbvQpAttr.setByte(a, IbvQpAttr.MAX_RD_ATOMIC, Math.min(MAX_RD_ATOMIC, rc.maxQpInitRdAtom));
            modify(a, IbvQpAttr.MASK_RTS, "RTR->RTS");
        }
    }

    /**
     * Posts one single-SGE send work request ({@code remoteAddr}/{@code rkey} for RDMA, plus {@code compareAdd} and
     * {@code swap} for atomics). Returns 0 or the errno value post_send returned.
     */
    int postSend(long wrId, int opcode, int flags, long addr, int length, int lkey, long remoteAddr, int rkey,
                 long compareAdd, long swap) {
        if (destroyed) {
            return EINVAL; // the provider would touch the freed queue pair and completion queue
        }
        IbvSge.set(sendSge, addr, length, lkey);
        IbvSendWr.set(sendWr, wrId, sendSge, opcode, flags);
        if (opcode == IbvSendWr.IBV_WR_ATOMIC_FETCH_AND_ADD || opcode == IbvSendWr.IBV_WR_ATOMIC_CMP_AND_SWP) {
            IbvSendWr.atomic(sendWr, remoteAddr, rkey, compareAdd, swap);
        } else {
            IbvSendWr.rdma(sendWr, remoteAddr, rkey);
        }
        try {
            return (int) Verbs.POST.invokeExact(postSendFn, qp, sendWr, badWr);
        } catch (Throwable t) {
            throw new IllegalStateException("post_send downcall failed", t);
        }
    }

    /** Posts one single-SGE receive. Returns 0 or the errno value post_recv returned. */
    int postRecv(long wrId, long addr, int length, int lkey) {
        if (destroyed) {
            return EINVAL;
        }
        IbvSge.set(recvSge, addr, length, lkey);
        IbvRecvWr.set(recvWr, wrId, recvSge);
        try {
            return (int) Verbs.POST.invokeExact(postRecvFn, qp, recvWr, badWr);
        } catch (Throwable t) {
            throw new IllegalStateException("post_recv downcall failed", t);
        }
    }

    /** Polls up to {@link #POLL_BATCH} completions into {@link #wcs}; returns how many (negative: error). */
    int poll() {
        try {
            return (int) Verbs.POLL_CQ.invokeExact(pollCqFn, cq, POLL_BATCH, wcs);
        } catch (Throwable t) {
            throw new IllegalStateException("poll_cq downcall failed", t);
        }
    }

    /** Asks for an event on the completion channel at the next completion. Returns 0 or an errno value. */
    int requestNotify() {
        try {
            return (int) Verbs.REQ_NOTIFY_CQ.invokeExact(reqNotifyFn, cq, 0);
        } catch (Throwable t) {
            throw new IllegalStateException("req_notify_cq downcall failed", t);
        }
    }

    /**
     * Destroys the QP. Once {@code ibv_destroy_qp} returns, the device touches none of the memory the QP's requests
     * named: only then may buffers be freed or their writes be failed back to their owners. The CQ stays until
     * {@link #destroyCq()}, after the completion channel's events for it are acknowledged.
     */
    void destroyQp() {
        if (destroyed) {
            return;
        }
        destroyed = true;
        try {
            int ignored = (int) rc.verbs.destroyQp.invokeExact(qp);
        } catch (Throwable t) {
            throw new IllegalStateException("ibv_destroy_qp downcall failed", t);
        }
    }

    void destroyCq() {
        if (cqDestroyed) {
            return;
        }
        cqDestroyed = true;
        try {
            int ignored = (int) rc.verbs.destroyCq.invokeExact(cq);
        } catch (Throwable t) {
            throw new IllegalStateException("ibv_destroy_cq downcall failed", t);
        }
    }

    boolean isDestroyed() {
        return destroyed;
    }

    long cqAddress() {
        return cq.address();
    }

    long qpAddress() {
        return qp.address();
    }
}
