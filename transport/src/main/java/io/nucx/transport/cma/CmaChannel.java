package io.nucx.transport.cma;

import io.netty.channel.AbstractChannel;
import io.netty.channel.ChannelConfig;
import io.netty.channel.ChannelMetadata;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.ChannelPromise;
import io.netty.channel.DefaultChannelConfig;
import io.netty.channel.EventLoop;

import java.net.SocketAddress;
import java.nio.channels.ClosedChannelException;
import java.util.concurrent.CancellationException;

/**
 * An RMA lane to one process of this host: the cma transport's channel type. Its writes are {@link RmaOp}s, which it
 * performs with {@code process_vm_readv}/{@code process_vm_writev} on its event loop, one {@link Cma#CHUNK} per
 * loop turn (the calls copy memory and block for it, so a large operation must not hold the loop), in the order
 * written. A write completes when its whole operation is done and fails with the {@link CmaException} that stopped
 * it (EPERM, ESRCH, EFAULT, named). Nothing is ever read: cma carries no messages.
 *
 * <p>It registers no {@code IoHandle}, so it runs on any event loop (the endpoint's).
 */
public final class CmaChannel extends AbstractChannel {

    private static final ChannelMetadata METADATA = new ChannelMetadata(false);

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

    private final ChannelConfig config = new DefaultChannelConfig(this);
    private final Address local;
    private final Address remote;
    private final int peerPid;
    private final Runnable resume = this::resume;
    private Cma cma;
    private boolean resumeScheduled;
    /** In doWrite: promise listeners run inside it and may write (and flush) again. */
    private boolean writing;
    private volatile boolean open = true;

    CmaChannel(int peerPid) {
        super(null);
        this.peerPid = peerPid;
        this.local = new Address(Cma.pid());
        this.remote = new Address(peerPid);
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
    public ChannelConfig config() {
        return config;
    }

    @Override
    public boolean isOpen() {
        return open;
    }

    @Override
    public boolean isActive() {
        return open && isRegistered();
    }

    @Override
    public ChannelMetadata metadata() {
        return METADATA;
    }

    @Override
    protected AbstractUnsafe newUnsafe() {
        return new CmaUnsafe();
    }

    private final class CmaUnsafe extends AbstractUnsafe {
        @Override
        public void connect(SocketAddress remoteAddress, SocketAddress localAddress, ChannelPromise promise) {
            promise.setFailure(new UnsupportedOperationException("cma lanes are made by the cma iface"));
        }

        void resume() {
            flush0();
        }
    }

    @Override
    protected boolean isCompatible(EventLoop loop) {
        return true;
    }

    @Override
    protected SocketAddress localAddress0() {
        return local;
    }

    @Override
    protected SocketAddress remoteAddress0() {
        return remote;
    }

    @Override
    protected void doBind(SocketAddress localAddress) {
        throw new UnsupportedOperationException("a cma lane is created connected");
    }

    @Override
    protected void doDisconnect() {
        doClose();
    }

    @Override
    protected void doClose() {
        open = false;
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
        if (op.key().pid() != peerPid) {
            throw new IllegalArgumentException("remote key of pid " + op.key().pid() + " written to the cma lane of "
                    + "pid " + peerPid);
        }
        return op;
    }

    @Override
    protected void doWrite(ChannelOutboundBuffer in) throws Exception {
        if (!open) {
            throw new ClosedChannelException();
        }
        if (writing) {
            scheduleResume(in); // a completion listener wrote again: its chunk goes on the next turn
            return;
        }
        RmaOp op = (RmaOp) in.current();
        if (op == null) {
            return;
        }
        writing = true;
        try {
            step(in, op);
        } finally {
            writing = false;
        }
        scheduleResume(in);
    }

    private void step(ChannelOutboundBuffer in, RmaOp op) {
        if (op.isCancelled()) {
            in.remove(new CancellationException(op + " cancelled"));
        } else {
            if (cma == null) {
                cma = new Cma();
            }
            try {
                if (op.step(cma)) {
                    in.remove();
                }
            } catch (CmaException e) {
                in.remove(e);
            }
        }
    }

    /** One chunk per turn: the loop serves its other channels, then this lane goes on. */
    private void scheduleResume(ChannelOutboundBuffer in) {
        if (in.current() != null && !resumeScheduled) {
            resumeScheduled = true;
            eventLoop().execute(resume);
        }
    }

    private void resume() {
        resumeScheduled = false;
        if (open) {
            ((CmaUnsafe) unsafe()).resume();
        }
    }
}
