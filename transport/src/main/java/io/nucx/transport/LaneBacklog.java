package io.nucx.transport;

import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.unix.UnixChannel;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * What of the peer's waits on a lane for this side's loop to read it, whatever the lane's channel: a ring channel of
 * nucx's own ({@link AbstractLaneChannel}) says so itself; a socket's unread bytes are the kernel's and asked of it
 * ({@code ioctl(FIONREAD)}, for Netty's epoll and io_uring channels; NIO's hide their descriptor); a handler holding
 * whole frames for a later turn ({@link FrameHolder}, tcp's decoder past its turn's share) counts too. Keepalive
 * reads it so that a loop kept from its I/O by tasks does not take a live peer for silent. Loop only; not for hot
 * paths (a system call and a walk of the pipeline).
 */
public final class LaneBacklog {

    /** A handler that may hold whole frames of the peer's for a later turn (reads paused meanwhile). */
    public interface FrameHolder extends ChannelHandler {
        /** Whether it holds frames now. Loop only. */
        boolean holdsPeerFrames();
    }

    /**
     * {@code FIONREAD} ({@code SIOCINQ}) of the generic ioctl numbering, which x86-64, arm64, arm and riscv64 use
     * (powerpc, mips and sparc number it otherwise: there nothing is asked).
     */
    private static final long FIONREAD = 0x541B;
    /**
     * {@code int ioctl(int fd, unsigned long request, int *count)} (variadic from its third argument), or null;
     * critical, as FIONREAD never blocks, so the count goes into a Java array with no thread-state change.
     */
    private static final MethodHandle IOCTL;

    static {
        MethodHandle h = null;
        String arch = System.getProperty("os.arch", "");
        boolean generic = arch.equals("amd64") || arch.equals("x86_64") || arch.equals("aarch64")
                || arch.equals("arm") || arch.equals("riscv64");
        try {
            Linker linker = Linker.nativeLinker();
            MemorySegment ioctl = generic ? linker.defaultLookup().find("ioctl").orElse(null) : null;
            h = ioctl == null ? null : linker.downcallHandle(ioctl,
                    FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG, ADDRESS), Linker.Option.firstVariadicArg(2),
                    Linker.Option.critical(true));
        } catch (RuntimeException | LinkageError e) {
            h = null; // no count from the kernel: a socket's lane then says nothing waits, as before
        }
        IOCTL = h;
    }

    private LaneBacklog() {
    }

    /**
     * Whether frames of the peer's wait unread on {@code ch} for a read this side has asked for (reads not paused):
     * its loop has not got to them yet, but the peer spoke. False where that cannot be told (an NIO socket).
     * io_uring keeps one receive posted (nucx gives it no buffer ring, so no multishot receive), so the first bytes
     * to arrive go to its completion, not the socket: there this tells from the second frame on. Frames the lane's
     * inbound handler queued past a turn's share are not asked about: that turn handed its share up, so the peer was
     * heard then (tcp's decoder says what it holds all the same, and the timeout's message names it).
     */
    public static boolean peerFramesWaiting(Channel ch) {
        assert ch.eventLoop().inEventLoop() : "loop only";
        if (!ch.isActive()) {
            return false;
        }
        if (ch instanceof AbstractLaneChannel direct) {
            return direct.peerFramesWaiting();
        }
        return heldByHandler(ch) || ch.config().isAutoRead() && socketBytesUnread(ch) > 0;
    }

    /**
     * What the transport below holds for this side to read, for a keepalive timeout's message: a ring channel's own
     * account, a socket's unread bytes, and frames a handler holds; empty when there is nothing to say.
     */
    public static String transportState(Channel ch) {
        if (ch instanceof AbstractLaneChannel direct) {
            return direct.transportState();
        }
        long unread = socketBytesUnread(ch);
        String socket = unread < 0 ? "" : "socket " + unread + " B unread";
        if (!heldByHandler(ch)) {
            return socket;
        }
        return socket.isEmpty() ? "frames held for the next turn" : socket + ", frames held for the next turn";
    }

    private static boolean heldByHandler(Channel ch) {
        ChannelHandlerContext ctx = ch.pipeline().context(FrameHolder.class); // a lane has one decoder, if any
        return ctx != null && ((FrameHolder) ctx.handler()).holdsPeerFrames();
    }

    /** The bytes the kernel holds unread in {@code ch}'s socket, or -1 if it cannot be asked. */
    static long socketBytesUnread(Channel ch) {
        assert ch.eventLoop().inEventLoop() : "loop only: the descriptor is valid while the loop has not closed it";
        if (IOCTL == null || !(ch instanceof UnixChannel unix) || !ch.isOpen()) {
            return -1;
        }
        int fd = unix.fd().intValue();
        if (fd < 0) {
            return -1;
        }
        int[] count = new int[1];
        try {
            int rc = (int) IOCTL.invokeExact(fd, FIONREAD, MemorySegment.ofArray(count));
            return rc < 0 ? -1 : count[0];
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("ioctl(FIONREAD) on a lane's socket", t); // invokeExact's checked throw
        }
    }
}
