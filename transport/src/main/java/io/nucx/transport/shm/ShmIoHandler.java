package io.nucx.transport.shm;

import io.netty.channel.IoHandle;
import io.netty.channel.IoHandler;
import io.netty.channel.IoHandlerContext;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.IoOps;
import io.netty.channel.IoRegistration;
import io.netty.util.concurrent.ThreadAwareExecutor;
import io.netty.util.internal.logging.InternalLogger;
import io.netty.util.internal.logging.InternalLoggerFactory;
import io.nucx.transport.PolledIoHandle;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.util.Arrays;
import java.util.Objects;

/**
 * An event loop's I/O engine for shm channels that wraps the engine of the loop's other channels (epoll, io_uring
 * or NIO), so TCP and shm channels share one loop. Each pass polls every shm handle, then runs the wrapped engine
 * without blocking. When the rings have been idle for the spin time, the loop may park: it flags itself asleep in
 * each inbound ring (and as waiting in each full outbound ring), re-checks them, and only then blocks in the
 * wrapped engine. A producer that finds the flag writes one byte to the connection's Unix socket, which the wrapped
 * engine polls: that is the doorbell. A futex cannot wake an epoll or NIO wait and an eventfd needs descriptor
 * passing; the setup socket is already there and every engine can poll it (UCX's posix transport signals through
 * a Unix socket for the same reason).
 *
 * <p>Without shm handles it is the wrapped engine, polled without blocking for the same spin time after its last work
 * before it blocks in it (sockets only: no flags to set, the wrapped engine's own wake-up serves).
 *
 * <p>Idle passes back off as Agrona's {@code BackoffIdleStrategy} does, as far as {@link Backoff} allows: the first
 * {@code spinPasses} in a row (a loop without rings: {@code socketSpinPasses}) only hint the CPU
 * ({@link Thread#onSpinWait}); after that each idle pass gives the core away ({@link Thread#yield}) until work comes
 * or, when the loop may block, the spin time is over. On a machine with as many spinning loops as cores, a loop that
 * never yields leaves the JIT compiler's threads (and the peer it waits for) only what the scheduler takes from it by
 * force, so the first seconds run in the interpreter. But a yield on a machine busy with other work hands the core away
 * for a whole time slice (milliseconds), so by default loops yield only while the JIT compiler is at work
 * ({@link Backoff#JIT}): during the warm-up. A ping-pong at full speed never gets that far anyway: its loops find work
 * every few passes.
 */
public final class ShmIoHandler implements IoHandler {

    private static final InternalLogger LOGGER = InternalLoggerFactory.getInstance(ShmIoHandler.class);

    /** When an idle loop past its spin passes yields its core. */
    public enum Backoff {
        /** Never: it spins (the behaviour of a loop without back-off). */
        NEVER,
        /** While the JIT compiler works: the total compilation time grew within the last {@link #JIT_QUIET_NANOS}. */
        JIT,
        /** Always. */
        ALWAYS
    }

    /** JIT back-off: how long after the compiler last made progress loops still yield. */
    static final long JIT_QUIET_NANOS = 50_000_000L;
    /** JIT back-off: idle passes between two looks at the compilation time. */
    private static final int JIT_CHECK_EVERY = 1024;
    private static final CompilationMXBean JIT = ManagementFactory.getCompilationMXBean();

    private static final PolledIoHandle[] NONE = new PolledIoHandle[0];

    private final IoHandler delegate;
    private final long spinNanos;
    private final int spinPasses;
    /** {@link #spinPasses} of a loop without rings, whose idle pass is a system call (a poll of its sockets). */
    private final int socketSpinPasses;
    private final Backoff backoff;
    /** Idle passes in a row (no ring, engine or task work), for the back-off. */
    private int idlePasses;
    /** Idle passes that gave the core away ({@link Thread#yield}); loop thread only, read by tests. */
    int yields;
    /** JIT back-off: the compilation time last seen, when it last grew, and passes since the last look. */
    private long jitMillis = -1;
    private long jitProgressNanos;
    private int jitCheck;
    private boolean jitBusy;
    /** Replaced, never mutated, so a poll pass may iterate it while a handle deregisters. Loop thread only. */
    private PolledIoHandle[] handles = NONE;
    /** Whether the loop called {@link #prepareToDestroy}. Loop only. */
    private boolean preparedToDestroy;
    /**
     * Ring polls between two non-blocking passes of the wrapped engine once it has found something: a pass of the loop
     * counts {@link #LOOP_PASS_POLLS} (it costs about that many polls), a poll of {@link #spinOnRings} one. After
     * {@link #QUIET_DELEGATE_PASSES} passes in a row that found nothing (about a millisecond of quiet sockets: an
     * shm-only run has only its listener there), also at most once per {@link #QUIET_DELEGATE_NANOS}: a busy shm
     * ping-pong otherwise paid the system call every 40 messages or so, in its 99th percentile (0.21 us against 0.16
     * without), and only the first socket event after a quiet spell waits longer, at most that long. The first pass
     * that finds something, or a new socket, ends the quiet. A tcp lane in use never lets it begin.
     */
    static final int DELEGATE_EVERY = 256;
    static final int QUIET_DELEGATE_PASSES = 64;
    static final long QUIET_DELEGATE_NANOS = 50_000;
    static final int LOOP_PASS_POLLS = 8;
    private int pollsSinceDelegate;
    private boolean delegateBusy;
    /** Passes of the wrapped engine in a row that found nothing, and when the last one ran while quiet. */
    private int quietDelegatePasses;
    private long lastDelegatePass;
    /** When the polls began finding nothing; 0 while active. */
    private long idleSince;
    private final NonBlocking nonBlocking = new NonBlocking();
    /**
     * Busy-poll: ring polls an idle pass makes before it goes back around the event loop. Each trip around Netty's
     * loop reads the clock three or four times (scheduled tasks, {@code canBlock}) and looks at two task queues: with
     * nothing to do it cost more than the polls themselves, and a message arriving meanwhile waited for it.
     */
    static final int BUSY_SPIN_POLLS = 256;
    /**
     * Set by {@link #wakeup} (a task was added, on any thread) with a release store: a busy-poll spin goes back to the
     * loop to run it. A volatile store there would be a locked instruction on every task a loop gives itself.
     */
    private volatile boolean wakeRequested;
    private static final VarHandle WAKE_REQUESTED;

    static {
        try {
            WAKE_REQUESTED = MethodHandles.lookup().findVarHandle(ShmIoHandler.class,
                    "wakeRequested", boolean.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private ShmIoHandler(IoHandler delegate, long spinNanos, int spinPasses, int socketSpinPasses, Backoff backoff) {
        this.delegate = delegate;
        this.spinNanos = spinNanos;
        this.spinPasses = spinPasses;
        this.socketSpinPasses = socketSpinPasses;
        this.backoff = backoff;
    }

    /**
     * A factory of loops that run shm channels next to the channels of {@code delegate}'s engine.
     *
     * @param spinNanos how long an idle loop keeps polling its rings and sockets (a loop without rings: its sockets)
     *                  before it parks ({@code NUCX_SHM_SPIN}); 0 parks at once;
     *                  {@code Long.MAX_VALUE} never parks (busy-polling: the loop spins in non-blocking passes of
     *                  the wrapped engine, which must not spin by itself; epoll's BUSY_WAIT waits in native code
     *                  for a descriptor and lets neither tasks from other threads nor timers run)
     */
    public static IoHandlerFactory newFactory(IoHandlerFactory delegate, long spinNanos) {
        return newFactory(delegate, spinNanos, 0, Backoff.NEVER);
    }

    /**
     * As {@link #newFactory(IoHandlerFactory, long)}, backing off after {@code spinPasses} idle passes in a row: each
     * further idle pass yields the core ({@link Thread#yield}) when {@code backoff} says so.
     */
    public static IoHandlerFactory newFactory(IoHandlerFactory delegate, long spinNanos, int spinPasses,
                                              Backoff backoff) {
        return newFactory(delegate, spinNanos, spinPasses, spinPasses, backoff);
    }

    /**
     * As {@link #newFactory(IoHandlerFactory, long, int, Backoff)}, a loop without rings (sockets only) backing off
     * after {@code socketSpinPasses} idle passes instead: its idle pass is a system call, not a look at memory.
     */
    public static IoHandlerFactory newFactory(IoHandlerFactory delegate, long spinNanos, int spinPasses,
                                              int socketSpinPasses, Backoff backoff) {
        Objects.requireNonNull(backoff, "backoff");
        if (spinNanos < 0) {
            throw new IllegalArgumentException("spin time must not be negative: " + spinNanos);
        }
        if (spinPasses < 0 || socketSpinPasses < 0) {
            throw new IllegalArgumentException("spin passes must not be negative: " + spinPasses + ", "
                    + socketSpinPasses);
        }
        return new IoHandlerFactory() {
            @Override
            public IoHandler newHandler(ThreadAwareExecutor executor) {
                return new ShmIoHandler(delegate.newHandler(executor), spinNanos, spinPasses, socketSpinPasses,
                        backoff);
            }

            @Override
            public boolean isChangingThreadSupported() {
                return delegate.isChangingThreadSupported();
            }

            /** What its loops do when idle, for logs and for a check that configuration reached them. */
            @Override
            public String toString() {
                return "shm engine (" + (spinNanos == Long.MAX_VALUE ? "busy-poll" : "spin " + spinNanos + " ns")
                        + ", back-off " + backoff + " after " + spinPasses + " idle passes"
                        + (socketSpinPasses == spinPasses ? "" : ", " + socketSpinPasses + " with sockets only")
                        + ") around " + delegate;
            }
        };
    }

    @Override
    public void initialize() {
        delegate.initialize();
    }

    @Override
    public int run(IoHandlerContext context) {
        PolledIoHandle[] hs = handles;
        if (hs.length == 0) {
            return runSocketsOnly(context);
        }
        int work = pollAll(hs);
        if (work == 0 && spinNanos == Long.MAX_VALUE) {
            work = spinOnRings(hs, context);
        }
        if (work > 0) {
            idleSince = 0;
            idlePasses = 0;
            return work + pollDelegate(context);
        }
        long now = System.nanoTime();
        if (idleSince == 0) {
            idleSince = now;
        }
        if (!context.canBlock() || now - idleSince < spinNanos) {
            return idleUnlessWork(context, pollDelegate(context), spinPasses);
        }
        boolean park = true;
        int armed = 0;
        for (; armed < hs.length && park; armed++) {
            park = hs[armed].prepareToPark();
        }
        try {
            return delegate.run(park ? context : nonBlocking.wrap(context));
        } finally {
            for (int i = 0; i < armed; i++) {
                hs[i].unpark();
            }
            idleSince = 0;
            idlePasses = 0;
        }
    }

    /**
     * A loop without rings (sockets only): non-blocking passes of the wrapped engine for the spin time after its last
     * work, then one that blocks. A reply that comes within the spin is read without the wake-up, which on this
     * machine made a blocking tcp ping-pong of 8 B take 36 us a one-way trip against 4.3 polling (BENCHMARKS.md).
     * Busy-polling spins here for ever, so tasks from other threads and timers run; a spin time of 0 blocks at once.
     */
    private int runSocketsOnly(IoHandlerContext context) {
        if (spinNanos == Long.MAX_VALUE) {
            return idleUnlessWork(context, delegate.run(nonBlocking.wrap(context)), socketSpinPasses);
        }
        if (spinNanos == 0 || !context.canBlock()) { // tasks are waiting: the pass does not block anyway
            idleSince = 0;
            return delegate.run(context);
        }
        long now = System.nanoTime();
        if (idleSince == 0) {
            idleSince = now;
        }
        if (now - idleSince < spinNanos) {
            int work = delegate.run(nonBlocking.wrap(context));
            if (work > 0) {
                idleSince = 0;
            }
            return idleUnlessWork(context, work, socketSpinPasses);
        }
        // Woken by a socket or by a task from another thread ({@link #wakeup}): the next idle pass starts a new spin
        // (a task is often a send, whose reply then comes within it). A wake-up for nothing (an engine's stale one)
        // must not, or the loop would spin again and again. Cleared before the wait: a task added meanwhile sets it.
        wakeRequested = false;
        int work = delegate.run(context);
        if (work > 0 || (boolean) WAKE_REQUESTED.getOpaque(this)) {
            idleSince = 0;
            idlePasses = 0;
        }
        return work;
    }

    /**
     * One poll of every ring handle; the work they found. A handle whose poll throws is closed and the loop goes on,
     * as Netty's engines survive a channel's exception: escaping the loop, it would end every channel on it.
     */
    private static int pollAll(PolledIoHandle[] hs) {
        int work = 0;
        for (PolledIoHandle h : hs) {
            try {
                work += h.poll();
            } catch (RuntimeException e) {
                work += closeFailed(h, e);
            }
        }
        return work;
    }

    private static int closeFailed(PolledIoHandle h, RuntimeException e) {
        LOGGER.warn("Closing {}: its poll threw", h, e);
        try {
            h.close();
        } catch (RuntimeException c) {
            LOGGER.warn("Closing {} failed too", h, c);
        }
        return 1;
    }

    /**
     * Busy-poll with the rings idle: polls them (and now and then the wrapped engine) up to {@link #BUSY_SPIN_POLLS}
     * times without leaving, until one has work or a task arrives ({@link #wakeup}; timers wait at most the spin,
     * microseconds). Not while the back-off would give the core away (the JIT is at work), nor with tasks waiting.
     */
    private int spinOnRings(PolledIoHandle[] hs, IoHandlerContext context) {
        if (idlePasses >= spinPasses && (backoff == Backoff.ALWAYS || backoff == Backoff.JIT && jitBusy())) {
            return 0;
        }
        // Cleared before the look at the task queue (a volatile store orders the two): a task added after the look
        // finds the flag cleared and sets it.
        wakeRequested = false;
        if (!context.canBlock()) {
            return 0;
        }
        for (int spin = 0; spin < BUSY_SPIN_POLLS; spin++) {
            int work = pollAll(hs);
            if (work > 0) {
                return work;
            }
            if (++pollsSinceDelegate >= DELEGATE_EVERY) {
                int engine = pollDelegate(context, 0);
                if (engine > 0) {
                    return engine;
                }
            }
            if ((boolean) WAKE_REQUESTED.getOpaque(this)) {
                return 0; // tasks run after this pass
            }
            Thread.onSpinWait();
        }
        return 0;
    }

    /**
     * Ends a spinning pass that found {@code work}: none, and no task waiting either ({@code canBlock}), is an idle
     * pass, which spins ({@code passes} in a row) or yields as the class says.
     */
    private int idleUnlessWork(IoHandlerContext context, int work, int passes) {
        if (work > 0 || !context.canBlock()) {
            idlePasses = 0;
            return work;
        }
        if (idlePasses < passes) {
            idlePasses++;
            Thread.onSpinWait();
        } else if (backoff == Backoff.ALWAYS || backoff == Backoff.JIT && jitBusy()) {
            yields++;
            Thread.yield();
        } else {
            Thread.onSpinWait();
        }
        return 0;
    }

    /** Whether the JIT compiler made progress lately (looked at every {@link #JIT_CHECK_EVERY} calls). */
    private boolean jitBusy() {
        if (++jitCheck >= JIT_CHECK_EVERY || jitMillis < 0) {
            jitCheck = 0;
            long now = System.nanoTime();
            long millis = JIT.getTotalCompilationTime();
            if (millis != jitMillis) {
                jitMillis = millis;
                jitProgressNanos = now;
            }
            jitBusy = now - jitProgressNanos < JIT_QUIET_NANOS;
        }
        return jitBusy;
    }

    /**
     * A non-blocking pass of the wrapped engine, but not on every ring poll: each is a system call (epoll_wait,
     * io_uring_enter or select with no wait), and paying one per pass made the spinning loop spend 40% of its time
     * in the kernel. While the engine keeps finding work it is polled every pass; otherwise after
     * {@link #DELEGATE_EVERY} ring polls (a few microseconds; at most every {@link #QUIET_DELEGATE_NANOS} once the
     * sockets have been quiet a while), which bounds the extra delay of a socket event while the rings are busy. Tasks are
     * not delayed: the event loop runs them after every pass.
     */
    private int pollDelegate(IoHandlerContext context) {
        return pollDelegate(context, LOOP_PASS_POLLS);
    }

    /** As {@link #pollDelegate(IoHandlerContext)}, counting {@code polls} ring polls since the last call. */
    private int pollDelegate(IoHandlerContext context, int polls) {
        if (delegateBusy || (pollsSinceDelegate += polls) >= DELEGATE_EVERY) {
            pollsSinceDelegate = 0;
            if (quietDelegatePasses >= QUIET_DELEGATE_PASSES) {
                long now = System.nanoTime(); // one clock read per DELEGATE_EVERY polls
                if (now - lastDelegatePass < QUIET_DELEGATE_NANOS) {
                    return 0;
                }
                lastDelegatePass = now;
            }
            int n = delegate.run(nonBlocking.wrap(context));
            delegateBusy = n > 0;
            quietDelegatePasses = n > 0 ? 0 : quietDelegatePasses + 1;
            return n;
        }
        return 0;
    }

    @Override
    public IoRegistration register(IoHandle handle) throws Exception {
        if (!(handle instanceof PolledIoHandle shm)) {
            quietDelegatePasses = 0; // a new socket: its connect or first bytes are looked for soon
            return delegate.register(handle);
        }
        PolledIoHandle[] hs = Arrays.copyOf(handles, handles.length + 1);
        hs[hs.length - 1] = shm;
        handles = hs;
        idleSince = 0;
        Registration r = new Registration(shm);
        shm.registered();
        if (spinNanos == Long.MAX_VALUE) {
            shm.loopNeverParks();
        }
        return r;
    }

    private void remove(PolledIoHandle handle) {
        PolledIoHandle[] hs = handles;
        for (int i = 0; i < hs.length; i++) {
            if (hs[i] == handle) {
                PolledIoHandle[] n = new PolledIoHandle[hs.length - 1];
                System.arraycopy(hs, 0, n, 0, i);
                System.arraycopy(hs, i + 1, n, i, hs.length - i - 1);
                handles = n;
                return;
            }
        }
    }

    @Override
    public void wakeup() {
        WAKE_REQUESTED.setRelease(this, true);
        delegate.wakeup();
    }

    @Override
    public boolean isCompatible(Class<? extends IoHandle> handleType) {
        return PolledIoHandle.class.isAssignableFrom(handleType) || delegate.isCompatible(handleType);
    }

    @Override
    public void prepareToDestroy() {
        preparedToDestroy = true;
        for (PolledIoHandle h : handles) {
            try {
                h.close();
            } catch (Exception ignored) {
                // closing on shutdown; the channel reports its own errors
            }
        }
        delegate.prepareToDestroy();
    }

    /**
     * Closes the handles first if {@link #prepareToDestroy} never ran: Netty's loop calls it only after a turn's I/O,
     * so a shutdown that begins during the turn's tasks with no quiet period ends the loop without it, and handles
     * left open would hold their writes (an rdma lane's posted frames, a device atomic's promise) for ever. The loop
     * takes no more tasks by now: a closing channel's later events are refused, its writes still fail.
     */
    @Override
    public void destroy() {
        if (!preparedToDestroy) {
            prepareToDestroy();
        }
        delegate.destroy();
    }

    private final class Registration implements IoRegistration {
        private final PolledIoHandle handle;
        private boolean valid = true;

        Registration(PolledIoHandle handle) {
            this.handle = handle;
        }

        @Override
        @SuppressWarnings("unchecked")
        public <T> T attachment() {
            return (T) ShmIoHandler.this;
        }

        @Override
        public long submit(IoOps ops) {
            throw new UnsupportedOperationException("shm handles are polled; they submit no operations");
        }

        @Override
        public boolean isValid() {
            return valid;
        }

        @Override
        public boolean cancel() {
            if (!valid) {
                return false;
            }
            valid = false;
            remove(handle);
            handle.unregistered();
            return true;
        }
    }

    /** The loop's context with blocking taken away, for the wrapped engine's passes between ring polls. */
    private static final class NonBlocking implements IoHandlerContext {
        private IoHandlerContext context;

        NonBlocking wrap(IoHandlerContext c) {
            this.context = c;
            return this;
        }

        @Override
        public boolean canBlock() {
            return false;
        }

        @Override
        public long delayNanos(long currentTimeNanos) {
            return 0;
        }

        @Override
        public long deadlineNanos() {
            return context.deadlineNanos();
        }

        @Override
        public void reportActiveIoTime(long activeNanos) {
            context.reportActiveIoTime(activeNanos);
        }

        @Override
        public boolean shouldReportActiveIoTime() {
            return context.shouldReportActiveIoTime();
        }
    }
}
