package io.nucx.transport.cma;

import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import io.netty.util.concurrent.ScheduledFuture;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * When the peer of one cma lane has exited: what a cma {@link CmaRegistration#revoke()} waits for, because nothing
 * else stops a process of the same user from writing our memory with {@code process_vm_writev}. A
 * {@link ProcessExitWatch} (pidfd, else kill(pid, 0)) is opened with the first live registration, while the peer is
 * connected to us, so the pidfd names that process and not a later one with a reused pid. It stays open for the
 * lane's next registrations and closes once the lane has closed and no registration is left: opened and closed with
 * each one (two system calls and a confined arena per rendezvous PUT, whose receiver registers its buffer for every
 * message) it cost 1.7-2.4 us a registration, where rendezvous PUT of 64 KiB took 7.7 us one way. So a lane that
 * registered holds one descriptor, as a registration in flight did. While revokes wait it is polled every
 * {@value #POLL_MILLIS} ms on the lane's loop. Loop only.
 */
final class PeerExit {

    /** How often waiting revokes check whether the peer's process has exited. */
    static final long POLL_MILLIS = 100;

    private final int pid;
    private ProcessExitWatch watch;
    /** Once true, stays true: the process is gone for good. */
    private boolean exited;
    private int registrations;
    private boolean laneClosed;
    private final List<Promise<Void>> waiting = new ArrayList<>();
    private ScheduledFuture<?> poll;

    PeerExit(int pid) {
        this.pid = pid;
    }

    int pid() {
        return pid;
    }

    boolean exited() {
        return exited;
    }

    /** A registration starts: watch the peer from now on. */
    void retain() {
        if (registrations++ == 0 && !exited && watch == null) {
            watch = ProcessExitWatch.open(pid);
            exited = watch == null; // no such process any more
        }
    }

    /** A registration ended; the watch closes with the last one once the lane has closed. */
    void release() {
        if (--registrations == 0 && laneClosed) {
            closeWatch();
        }
    }

    /** The lane closed: no registration starts any more; the watch closes now, or with the last one left. */
    void laneClosed() {
        laneClosed = true;
        if (registrations == 0) {
            closeWatch();
        }
    }

    private void closeWatch() {
        if (watch != null) {
            watch.close();
            watch = null;
        }
    }

    /** Whether the peer is watched now (a descriptor held, where the kernel gives pidfds). */
    boolean watching() {
        return watch != null;
    }

    /** Completes when the peer's process has exited: at once if it has, else checked every POLL_MILLIS on loop. */
    Future<Void> whenExited(EventExecutor loop) {
        if (exited || checkNow()) {
            return loop.newSucceededFuture(null);
        }
        Promise<Void> p = loop.newPromise();
        waiting.add(p);
        schedule(loop);
        return p;
    }

    /** Stops waiting for {@code p} (its registration was closed meanwhile). */
    void cancel(Promise<Void> p) {
        waiting.remove(p);
        if (waiting.isEmpty() && poll != null) {
            poll.cancel(false);
            poll = null;
        }
    }

    private boolean checkNow() {
        if (watch != null && watch.hasExited()) {
            exited = true;
        }
        return exited;
    }

    private void schedule(EventExecutor loop) {
        if (poll != null) {
            return;
        }
        try {
            poll = loop.schedule(() -> {
                poll = null;
                if (checkNow()) {
                    List<Promise<Void>> done = new ArrayList<>(waiting);
                    waiting.clear();
                    done.forEach(p -> p.trySuccess(null));
                } else if (!waiting.isEmpty()) {
                    schedule(loop);
                }
            }, POLL_MILLIS, TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException e) {
            List<Promise<Void>> failed = new ArrayList<>(waiting);
            waiting.clear();
            failed.forEach(p -> p.tryFailure(new IllegalStateException("the loop of the cma lane to pid " + pid
                    + " shut down before that process exited", e)));
        }
    }

    @Override
    public String toString() {
        return "pid " + pid + (exited ? " (exited)" : watch != null ? " (" + watch + ")" : "");
    }
}
