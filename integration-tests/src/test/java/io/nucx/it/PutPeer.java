package io.nucx.it;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.ChannelFuture;
import io.nucx.Endpoint;
import io.nucx.NucxBootstrap;
import io.nucx.Worker;
import io.nucx.WorkerAddress;
import io.nucx.protocol.select.SelectionKey;
import io.nucx.protocol.tag.RndvProtocols;
import io.nucx.protocol.tag.TagMessage;
import io.nucx.transport.testing.LeakRecorder;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The other process of the rndv/put/zcopy tests (settings from NUCX_* in its environment). Prints
 * {@code ADDRESS <hex>}, then runs one role:
 * <ul>
 *   <li>{@code send SIZES STALL_MS}: reads the receiver's address from standard input, connects, sends a 1-byte
 *       message with tag {@link #HELLO_TAG} and waits for it to go, prints {@code CONNECTED} and
 *       {@code PUT_FROM <size>} (where rndv/put/zcopy starts in its own table to the receiver, direct memory; -1 if it
 *       has none); waits for a line {@code GO}, or {@code GO SIZES} that replaces the SIZES it started with; then, if STALL_MS > 0, makes every turn of its event loop {@code STALL_MS} longer (a timer that
 *       sleeps, taken once per turn, standing for a sender busy with other work, so that a large PUT, 2 MiB per turn
 *       over cma, lasts long enough for a test to stop or kill it midway); sends message i = 0.. of the
 *       comma-separated SIZES ({@link MessagePlan} content, tag i) from direct buffers, all at once; prints
 *       {@code SENT i OK} or {@code SENT i <exception class> <message>} for each as it ends, then
 *       {@code COUNTERS {...}} and {@code FAILURES [...]} (the worker's RMA failures), closes and exits 0 (3 on a
 *       leak).</li>
 *   <li>{@code recv SIZES nondumpable}: receives the {@link #HELLO_TAG} message, then makes this process
 *       non-dumpable ({@code prctl(PR_SET_DUMPABLE, 0)}: from now on the kernel refuses a peer of the same user that
 *       lacks CAP_SYS_PTRACE access to its memory, EPERM, although lane selection allowed it), prints
 *       {@code NONDUMPABLE}; SIZES {@code -} reads them from a line of standard input then; receives message i of SIZES with tag i, checks each, and prints {@code COUNTERS {...}}
 *       and {@code REPORT OK} (or the first error); closes and exits 0 (3 on a leak).</li>
 * </ul>
 */
public final class PutPeer {

    static final long HELLO_TAG = 0x7ffe_0000_0000_0000L;
    private static final int PR_SET_DUMPABLE = 4;

    public static void main(String[] args) throws Exception {
        LeakRecorder.install();
        String role = args[0];
        int[] sizes = args[1].equals("-") ? null : sizes(args[1]);
        Worker worker = new NucxBootstrap().name("put-peer").start();
        System.out.println("ADDRESS " + worker.address().toHex());
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        switch (role) {
            case "send" -> send(worker, in, sizes, Long.parseLong(args[2]));
            case "recv" -> receive(worker, in, sizes, args.length > 2 && args[2].equals("nondumpable"));
            default -> throw new IllegalArgumentException("unknown role " + role);
        }
        System.out.flush();
        worker.close().get(30, TimeUnit.SECONDS);
        var leaks = LeakRecorder.collect();
        if (!leaks.isEmpty()) {
            System.err.println("peer leaked " + leaks.size() + " buffer(s)");
            System.exit(3);
        }
        System.exit(0);
    }

    private static int[] sizes(String commaSeparated) {
        return Arrays.stream(commaSeparated.split(",")).mapToInt(Integer::parseInt).toArray();
    }

    private static void send(Worker worker, BufferedReader in, int[] sizes, long stallMillis) throws Exception {
        WorkerAddress receiver = WorkerAddress.fromHex(in.readLine().trim());
        Endpoint ep = worker.connect(receiver);
        // Asked before the hello: the table selects lanes anew, and a receiver that turns non-dumpable once the hello
        // arrives may already refuse the permission probe by then (no cma lane, no PUT: seen once in CI).
        long putFrom = worker.protocolTable(receiver, SelectionKey.MemoryType.DIRECT).entries().stream()
                .filter(e -> e.candidate().protocol() == RndvProtocols.PUT_ZCOPY)
                .mapToLong(e -> e.start()).findFirst().orElse(-1);
        ep.tagSend(HELLO_TAG, ByteBufAllocator.DEFAULT.buffer(1).writeByte(1)).sync();
        System.out.println("CONNECTED");
        System.out.println("PUT_FROM " + putFrom);
        System.out.flush();
        String go = in.readLine();
        if (go != null && go.startsWith("GO ")) {
            sizes = sizes(go.substring(3).trim());
        } else if (!"GO".equals(go)) {
            throw new IllegalStateException("expected GO, got " + go);
        }
        if (stallMillis > 0) {
            worker.eventLoop().scheduleAtFixedRate(() -> {
                try {
                    Thread.sleep(stallMillis);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, 1, 1, TimeUnit.MILLISECONDS);
        }
        ChannelFuture[] sends = new ChannelFuture[sizes.length];
        for (int i = 0; i < sizes.length; i++) {
            ByteBuf heap = MessagePlan.content(i, sizes[i]);
            try {
                sends[i] = ep.tagSend(i, ByteBufAllocator.DEFAULT.directBuffer(sizes[i]).writeBytes(heap));
            } finally {
                heap.release();
            }
        }
        for (int i = 0; i < sizes.length; i++) {
            ChannelFuture f = sends[i];
            if (!f.await(120, TimeUnit.SECONDS)) {
                System.out.println("SENT " + i + " timed out");
            } else {
                System.out.println("SENT " + i + (f.isSuccess() ? " OK" : " " + f.cause().getClass().getSimpleName()
                        + " " + f.cause().getMessage()));
            }
            System.out.flush();
        }
        System.out.println("COUNTERS " + worker.counters().snapshot());
        System.out.println("FAILURES " + worker.rmaFailures().stream().map(Throwable::getMessage).toList());
    }

    private static void receive(Worker worker, BufferedReader in, int[] sizes, boolean nondumpable)
            throws Exception {
        worker.tagRecv(HELLO_TAG, -1L).get(60, TimeUnit.SECONDS).release();
        if (nondumpable) {
            int r;
            try {
                r = (int) prctl().invokeExact(PR_SET_DUMPABLE, 0L);
            } catch (Throwable t) {
                throw new IllegalStateException("prctl downcall failed", t);
            }
            if (r != 0) {
                throw new IllegalStateException("prctl(PR_SET_DUMPABLE, 0) returned " + r);
            }
            System.out.println("NONDUMPABLE");
            System.out.flush();
        }
        if (sizes == null) {
            sizes = sizes(in.readLine().trim());
        }
        String report = "OK";
        for (int i = 0; i < sizes.length; i++) {
            TagMessage m = worker.tagRecv(i, -1L).get(120, TimeUnit.SECONDS);
            try {
                String bad = MessagePlan.check(i, sizes[i], m.content());
                if (bad != null && report.equals("OK")) {
                    report = bad;
                }
            } finally {
                m.release();
            }
        }
        System.out.println("COUNTERS " + worker.counters().snapshot());
        System.out.println("REPORT " + report);
    }

    /** {@code int prctl(int option, ...)}, called with one unsigned long argument. */
    private static MethodHandle prctl() {
        Linker linker = Linker.nativeLinker();
        return linker.downcallHandle(linker.defaultLookup().find("prctl").orElseThrow(),
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG), Linker.Option.firstVariadicArg(1));
    }
}
