package io.nucx.transport;

import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.unix.UnixChannel;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.Map;

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
    public interface FrameHolder {
        /** Whether it holds frames now. Loop only. */
        boolean holdsPeerFrames();
    }

    /** {@code FIONREAD} ({@code SIOCINQ}): the same number on every Linux architecture nucx runs on. */
    private static final long FIONREAD = 0x541B;
    /** {@code int ioctl(int fd, unsigned long request, int *count)} (variadic from its third argument), or null. */
    private static final MethodHandle IOCTL;

    static {
        MethodHandle h = null;
        try {
            Linker linker = Linker.nativeLinker();
            MemorySegment ioctl = linker.defaultLookup().find("ioctl").orElse(null);
            h = ioctl == null ? null : linker.downcallHandle(ioctl,
                    FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG, ADDRESS), Linker.Option.firstVariadicArg(2));
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
     * io_uring keeps one receive posted, so the first bytes to arrive go to its completion, not the socket: there
     * this tells from the second frame on.
     */
    public static boolean peerFramesWaiting(Channel ch) {
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
        for (Map.Entry<String, ChannelHandler> e : ch.pipeline()) {
            if (e.getValue() instanceof FrameHolder h && h.holdsPeerFrames()) {
                return true;
            }
        }
        return false;
    }

    /** The bytes the kernel holds unread in {@code ch}'s socket, or -1 if it cannot be asked. */
    static long socketBytesUnread(Channel ch) {
        if (IOCTL == null || !(ch instanceof UnixChannel unix) || !ch.isOpen()) {
            return -1;
        }
        int fd = unix.fd().intValue();
        if (fd < 0) {
            return -1;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment count = arena.allocate(JAVA_INT);
            int rc = (int) IOCTL.invokeExact(fd, FIONREAD, count);
            return rc < 0 ? -1 : count.get(JAVA_INT, 0);
        } catch (Throwable t) {
            throw new IllegalStateException("ioctl(FIONREAD) on a lane's socket", t); // the handle's type: a bug
        }
    }
}
