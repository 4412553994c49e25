package io.nucx.transport.cma;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.GenericFutureListener;
import io.nucx.transport.AbstractLaneChannel;
import io.nucx.transport.rma.InvalidRemoteKeyException;
import io.nucx.transport.rma.MemoryRegistration;
import io.nucx.transport.rma.RemoteKey;
import io.nucx.transport.rma.RmaLane;
import io.nucx.transport.rma.RmaOp;

import java.lang.foreign.MemorySegment;
import java.net.SocketAddress;
import java.util.concurrent.CancellationException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * An RMA lane to one process of this host: the cma transport's channel type and its {@link RmaLane}. Its writes are
 * GET and PUT {@link RmaOp}s, which it performs with {@code process_vm_readv}/{@code process_vm_writev} on its event
 * loop, in calls of one {@link Cma#CHUNK}, {@link Cma#TURN_BYTES} per loop turn (the calls copy memory and block for
 * it, so a large operation must not hold the loop), in the order written. A write completes when its whole operation
 * is done and fails with the {@link CmaException} that stopped it (EPERM, ESRCH, EFAULT, named). Atomics are refused:
 * the kernel offers no atomic cross-process call. Nothing is ever read: cma carries no messages.
 *
 * <p>{@link #register} exposes native memory of this process to the peer (a key only: the kernel checks permission on
 * every call); cma cannot withdraw that access, so a registration's {@code revoke()} completes when the peer's process
 * has exited ({@link PeerExit}), also after this channel has closed.
 *
 * <p>It registers no {@code IoHandle}, so it runs on any event loop (the endpoint's).
 */
public final class CmaChannel extends AbstractLaneChannel implements RmaLane {

    private static final class Address extends SocketAddress {
        private static final long serialVersionUID = 1L;
        private final int pid;

        Address(int pid) {
            this.pid = pid;
        }

        @Override
        public String toString() {
            return "cma:pid " + pid;
        }
    }

    private final int peerPid;
    private final PeerExit peerExit;
    /** What an op that ends moving nothing counts against {@link Cma#TURN_BYTES}: at most 512 such per turn. */
    private static final long ENDED_OP_BYTES = Cma.TURN_BYTES / 512;

    private final Runnable resume = this::resume;
    private final GenericFutureListener<Future<Object>> resumeCancelled = this::resumeCancelled;
    private Cma cma;
    private boolean resumeScheduled;
    /** In doWrite: promise listeners run inside it and may write (and flush) again. */
    private boolean writing;

    CmaChannel(int peerPid) {
        super(new Address(Cma.pid()), new Address(peerPid), State.CONNECTED, null); // nothing to set up: see CmaIface
        this.peerPid = peerPid;
        this.peerExit = new PeerExit(peerPid);
    }

    /** An unregistered lane to {@code pid} (the cma iface makes them for endpoints; tests register their own). */
    public static CmaChannel toProcess(int pid) {
        return new CmaChannel(pid);
    }

    /** The process this lane reads and writes. */
    public int peerPid() {
        return peerPid;
    }

    @Override
    public Channel channel() {
        return this;
    }

    @Override
    public boolean supports(RmaOp.Kind kind) {
        return kind == RmaOp.Kind.GET || kind == RmaOp.Kind.PUT;
    }

    /**
     * Exposes native memory of this process to the peer. Registered lanes only (a revoke waits on the lane's loop).
     *
     * @throws IllegalArgumentException for heap memory (the GC moves it: no address another process could use)
     */
    @Override
    public MemoryRegistration register(MemorySegment local) {
        CmaKey key = CmaKey.of(local);
        if (!isRegistered()) {
            throw new IllegalStateException("cma lane to pid " + peerPid + " is not registered with a loop");
        }
        assert eventLoop().inEventLoop();
        return new CmaRegistration(key, peerExit, eventLoop());
    }

    @Override
    public RemoteKey unpackKey(ByteBuf packed) throws InvalidRemoteKeyException {
        return CmaKey.unpack(packed, peerPid);
    }

    /**
     * One chunk or less, on the loop, with nothing queued and no write under way: the same call {@link #doWrite}
     * would make, without the write around it. An op the write would refuse (another kind, another lane's key, a
     * cancelled one) is left to the write, which fails it the usual way.
     */
    @Override
    public boolean performNow(RmaOp op) throws CmaException {
        if (writing || op.length() - op.done() > Cma.CHUNK || op.isCancelled() || !supports(op.kind())
                || !(op.key() instanceof CmaKey key) || key.pid() != peerPid || !isActive()
                || !eventLoop().inEventLoop() || !nothingQueued()) {
            return false;
        }
        return step(cma(), op);
    }

    /** The lane's system-call state, made at its first operation. */
    private Cma cma() {
        if (cma == null) {
            cma = new Cma();
        }
        return cma;
    }

    /** Active once registered: the kernel checks permission on every call, so there is nothing to set up. */
    @Override
    public boolean isActive() {
        return super.isActive() && isRegistered();
    }

    @Override
    protected void doClose() {
        markClosed();
        peerExit.laneClosed();
        if (cma != null) {
            cma.close();
            cma = null;
        }
    }

    @Override
    protected void doBeginRead() {
        // nothing arrives on an RMA lane
    }

    @Override
    protected Object filterOutboundMessage(Object msg) {
        if (!(msg instanceof RmaOp op)) {
            throw new UnsupportedOperationException("a cma lane takes RmaOps, not " + msg.getClass().getName());
        }
        if (!supports(op.kind())) {
            throw new UnsupportedOperationException("cma performs GET and PUT only, not " + op.kind()
                    + ": the kernel has no atomic cross-process call (use AM atomics or a transport with ATOMIC64)");
        }
        if (!(op.key() instanceof CmaKey key) || key.pid() != peerPid) {
            throw new IllegalArgumentException(op.key() + " written to the cma lane of pid " + peerPid
                    + ": use a key this lane unpacked");
        }
        return op;
    }

    @Override
    protected void doWrite(ChannelOutboundBuffer in) throws Exception {
        ensureConnected();
        if (writing || resumeScheduled) {
            // A flush from a listener within this write, or one in a turn that already moved its bytes: the loop
            // below or the resume (after the next turn's I/O) takes what it brought, in order.
            scheduleResume(in);
            return;
        }
        writing = true;
        try {
            long moved = 0;
            // A listener may close the lane: what is left then fails with the close, not by another call.
            for (Object msg; moved < Cma.TURN_BYTES && isOpen() && (msg = in.current()) != null; ) {
                if (!(msg instanceof RmaOp op)) {
                    in.remove(); // a write cancelled before its flush: Netty left an empty buffer in its place
                    continue;
                }
                // An op that ends moving nothing (failed, cancelled) counts too, so that a listener writing such ops
                // again and again cannot keep the loop.
                moved += Math.max(step(in, op), ENDED_OP_BYTES);
            }
        } finally {
            writing = false;
        }
        scheduleResume(in);
    }

    /** Moves the next chunk of the first op, or ends it (cancelled, failed); returns the bytes moved. */
    private long step(ChannelOutboundBuffer in, RmaOp op) {
        if (op.isCancelled()) {
            in.remove(new CancellationException(op + " cancelled"));
            return 0;
        }
        long before = op.done();
        try {
            if (step(cma(), op)) {
                in.remove();
            }
        } catch (CmaException e) {
            in.remove(e);
        }
        return op.done() - before;
    }

    /** Moves the next chunk of {@code op}; true when the whole operation is done. */
    private static boolean step(Cma cma, RmaOp op) throws CmaException {
        long n = Math.min(Cma.CHUNK, op.length() - op.done());
        CmaKey key = (CmaKey) op.key();
        if (op.kind() == RmaOp.Kind.GET) {
            cma.get(key, op.remoteOffset() + op.done(), op.local(), op.done(), n);
        } else {
            cma.put(key, op.remoteOffset() + op.done(), op.local(), op.done(), n);
        }
        op.advance(n);
        return op.isDone();
    }

    /**
     * {@link Cma#TURN_BYTES} per turn: the loop serves its other channels and timers, then this lane goes on. A
     * scheduled task is taken only when a turn's tasks begin, after its I/O; one queued with {@code execute} would run
     * again in the same batch of tasks, and a large operation would hold the loop's reads and timers for up to Netty's
     * task quantum (a second).
     */
    private void scheduleResume(ChannelOutboundBuffer in) {
        if (in.current() != null && !resumeScheduled) {
            resumeScheduled = true;
            eventLoop().schedule(resume, 0, TimeUnit.NANOSECONDS).addListener(resumeCancelled);
        }
    }

    private void resume() {
        resumeScheduled = false;
        if (isOpen()) {
            resumeWrites();
        }
    }

    /**
     * Nothing cancels the resume but its loop shutting down (Netty cancels a loop's timers then, and this lane has no
     * {@code IoHandle} the loop would close): the ops left fail, saying so, and the lane closes. Without this, an op
     * part way through would never complete. Runs on the loop, within its shutdown.
     */
    private void resumeCancelled(Future<?> f) {
        if (!f.isCancelled()) {
            return;
        }
        resumeScheduled = false;
        failWritesAndClose(new RejectedExecutionException("cma lane to pid " + peerPid
                + ": its event loop shut down with operations part way through or queued"));
    }
}
