package io.nucx.transport.rdma;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * FFM bindings to one {@code libibverbs.so.1} (the system's, or the verbs emulator named by NUCX_VERBS_LIB), loaded
 * once per path into the global arena (providers stay loaded).
 *
 * <p>Two kinds of call:
 * <ul>
 *   <li><b>Control path</b>: the exported functions, bound per library. Those that return a pointer or -1 capture
 *   errno ({@code captureCallState}, the capture segment is the first argument); the others return the errno value
 *   itself (man ibv_modify_qp, ibv_query_port). Never {@code critical}: they make system calls.</li>
 *   <li><b>Data path</b>: {@code ibv_post_send}, {@code ibv_post_recv}, {@code ibv_poll_cq}, {@code ibv_req_notify_cq}
 *   are {@code static inline} in verbs.h and call {@code obj->context->ops.X}. nucx does the same: it reads the
 *   provider's function pointer from {@code ibv_context.ops} once per object ({@link IbvContext#op}) and calls it
 *   through one {@code static final} invoker per signature (the target is the invoker's first argument), so
 *   nothing is allocated or looked up per call. These are {@code critical}: short, non-blocking, and they never
 *   call back into Java.</li>
 * </ul>
 */
final class Verbs {

    /** The soname the real library goes by. */
    static final String DEFAULT_LIBRARY = "libibverbs.so.1";

    private static final Linker LINKER = Linker.nativeLinker();
    private static final StructLayout CAPTURE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final Linker.Option ERRNO_OPTION = Linker.Option.captureCallState("errno");
    private static final Linker.Option CRITICAL = Linker.Option.critical(false);

    /** {@code int post_send(struct ibv_qp *, struct ibv_send_wr *, struct ibv_send_wr **)}, and post_recv alike. */
    static final MethodHandle POST = LINKER.downcallHandle(
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS), CRITICAL);
    /** {@code int poll_cq(struct ibv_cq *, int num_entries, struct ibv_wc *)}. */
    static final MethodHandle POLL_CQ = LINKER.downcallHandle(
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS), CRITICAL);
    /** {@code int req_notify_cq(struct ibv_cq *, int solicited_only)}. */
    static final MethodHandle REQ_NOTIFY_CQ = LINKER.downcallHandle(
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT), CRITICAL);

    /** {@code int fcntl(int fd, int cmd, ...)} from the C library, to make the event fds non-blocking. */
    private static final MethodHandle FCNTL = LINKER.downcallHandle(
            LINKER.defaultLookup().find("fcntl").orElseThrow(),
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT), Linker.Option.firstVariadicArg(2),
            ERRNO_OPTION);
    private static final int F_GETFL = 3;
    private static final int F_SETFL = 4;
    private static final int O_NONBLOCK = 04000;

    static final int EAGAIN = 11;
    static final int ENOSYS = 38;

    private static final Map<String, Verbs> LOADED = new ConcurrentHashMap<>();

    final String library;
    final boolean hasRegMrIova2;
    final MethodHandle getDeviceList;
    final MethodHandle freeDeviceList;
    final MethodHandle openDevice;
    final MethodHandle closeDevice;
    final MethodHandle queryDevice;
    final MethodHandle queryPort;
    final MethodHandle queryGid;
    final MethodHandle allocPd;
    final MethodHandle deallocPd;
    final MethodHandle regMr;
    final MethodHandle deregMr;
    final MethodHandle createCompChannel;
    final MethodHandle destroyCompChannel;
    final MethodHandle createCq;
    final MethodHandle destroyCq;
    final MethodHandle getCqEvent;
    final MethodHandle ackCqEvents;
    final MethodHandle createQp;
    final MethodHandle modifyQp;
    final MethodHandle destroyQp;
    final MethodHandle getAsyncEvent;
    final MethodHandle ackAsyncEvent;
    /** {@code _ibv_query_gid_ex}, null before rdma-core 32 (then GID types are unknown: index 0 is used). */
    final MethodHandle queryGidEx;

    private Verbs(String library, SymbolLookup lookup) {
        this.library = library;
        getDeviceList = bind(lookup, "ibv_get_device_list", FunctionDescriptor.of(ADDRESS, ADDRESS), true);
        freeDeviceList = bind(lookup, "ibv_free_device_list", FunctionDescriptor.ofVoid(ADDRESS), false);
        openDevice = bind(lookup, "ibv_open_device", FunctionDescriptor.of(ADDRESS, ADDRESS), true);
        closeDevice = bind(lookup, "ibv_close_device", FunctionDescriptor.of(JAVA_INT, ADDRESS), false);
        queryDevice = bind(lookup, "ibv_query_device", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS), false);
        queryPort = bind(lookup, "ibv_query_port", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_BYTE, ADDRESS),
                false);
        queryGid = bind(lookup, "ibv_query_gid", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_BYTE, JAVA_INT,
                ADDRESS), true);
        allocPd = bind(lookup, "ibv_alloc_pd", FunctionDescriptor.of(ADDRESS, ADDRESS), true);
        deallocPd = bind(lookup, "ibv_dealloc_pd", FunctionDescriptor.of(JAVA_INT, ADDRESS), false);
        Optional<MemorySegment> iova2 = lookup.find("ibv_reg_mr_iova2");
        hasRegMrIova2 = iova2.isPresent();
        regMr = hasRegMrIova2
                // struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *, void *, size_t, uint64_t iova, unsigned int access)
                ? LINKER.downcallHandle(iova2.get(), FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, JAVA_LONG,
                        JAVA_LONG, JAVA_INT), ERRNO_OPTION)
                // rdma-core < 28: struct ibv_mr *ibv_reg_mr(struct ibv_pd *, void *, size_t, int access)
                : bind(lookup, "ibv_reg_mr", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT),
                        true);
        deregMr = bind(lookup, "ibv_dereg_mr", FunctionDescriptor.of(JAVA_INT, ADDRESS), false);
        createCompChannel = bind(lookup, "ibv_create_comp_channel", FunctionDescriptor.of(ADDRESS, ADDRESS), true);
        destroyCompChannel = bind(lookup, "ibv_destroy_comp_channel", FunctionDescriptor.of(JAVA_INT, ADDRESS),
                false);
        createCq = bind(lookup, "ibv_create_cq", FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_INT, ADDRESS, ADDRESS,
                JAVA_INT), true);
        destroyCq = bind(lookup, "ibv_destroy_cq", FunctionDescriptor.of(JAVA_INT, ADDRESS), false);
        getCqEvent = bind(lookup, "ibv_get_cq_event", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS),
                true);
        ackCqEvents = bind(lookup, "ibv_ack_cq_events", FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT), false);
        createQp = bind(lookup, "ibv_create_qp", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS), true);
        modifyQp = bind(lookup, "ibv_modify_qp", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT), false);
        destroyQp = bind(lookup, "ibv_destroy_qp", FunctionDescriptor.of(JAVA_INT, ADDRESS), false);
        getAsyncEvent = bind(lookup, "ibv_get_async_event", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS), true);
        ackAsyncEvent = bind(lookup, "ibv_ack_async_event", FunctionDescriptor.ofVoid(ADDRESS), false);
        // int _ibv_query_gid_ex(struct ibv_context *, uint32_t port, uint32_t index, struct ibv_gid_entry *,
        //                       uint32_t flags, size_t entry_size): 0 or an errno value
        queryGidEx = lookup.find("_ibv_query_gid_ex").map(f -> LINKER.downcallHandle(f, FunctionDescriptor.of(
                JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, JAVA_LONG))).orElse(null);
    }

    private static MethodHandle bind(SymbolLookup lookup, String name, FunctionDescriptor fd, boolean errno) {
        MemorySegment symbol = lookup.find(name).orElseThrow(() -> new UnsatisfiedLinkError(name));
        return errno ? LINKER.downcallHandle(symbol, fd, ERRNO_OPTION) : LINKER.downcallHandle(symbol, fd);
    }

    /**
     * The bindings to {@code library} (a soname searched the usual way, or a path), loaded on first use.
     *
     * @throws IllegalArgumentException the library cannot be loaded (message from dlopen)
     * @throws UnsatisfiedLinkError     it lacks a symbol nucx needs (named)
     */
    static Verbs load(String library) {
        return LOADED.computeIfAbsent(library, l -> new Verbs(l, l.contains("/")
                ? SymbolLookup.libraryLookup(Path.of(l), Arena.global())
                : SymbolLookup.libraryLookup(l, Arena.global())));
    }

    /** A capture segment for errno (one per thread that calls). */
    static MemorySegment newCaptureState(Arena arena) {
        return arena.allocate(CAPTURE);
    }

    static int errno(MemorySegment capture) {
        return (int) ERRNO.get(capture, 0L);
    }

    /** Sets O_NONBLOCK on an event fd the library made (completion channel, async events). */
    static void setNonBlocking(int fd) throws VerbsException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment cs = newCaptureState(arena);
            int flags = (int) FCNTL.invokeExact(cs, fd, F_GETFL, 0);
            if (flags < 0 || (int) FCNTL.invokeExact(cs, fd, F_SETFL, flags | O_NONBLOCK) < 0) {
                throw new VerbsException("fcntl(" + fd + ", O_NONBLOCK)", errno(cs));
            }
        } catch (VerbsException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("fcntl downcall failed", t);
        }
    }

    static String errnoName(int errno) {
        return switch (errno) {
            case 1 -> "EPERM";
            case 2 -> "ENOENT";
            case 5 -> "EIO";
            case 11 -> "EAGAIN";
            case 12 -> "ENOMEM (registering memory may need a higher RLIMIT_MEMLOCK: ulimit -l)";
            case 13 -> "EACCES";
            case 14 -> "EFAULT";
            case 16 -> "EBUSY";
            case 19 -> "ENODEV";
            case 22 -> "EINVAL";
            case 38 -> "ENOSYS";
            case 95 -> "EOPNOTSUPP";
            case 110 -> "ETIMEDOUT";
            default -> "errno " + errno;
        };
    }
}
