package io.nucx.it;

import io.nucx.Endpoint;
import io.nucx.ErrorMode;
import io.nucx.NucxBootstrap;
import io.nucx.Worker;
import io.nucx.WorkerAddress;
import io.nucx.protocol.amo.RemoteMemoryKey;
import io.nucx.protocol.tag.TagMessage;
import io.nucx.transport.rdma.VerbsEmulator;
import io.nucx.transport.testing.LeakRecorder;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * The other process of the two-process rdma tests: a worker (transports from NUCX_* in its environment, the verbs
 * emulator through NUCX_VERBS_LIB) that prints {@code ADDRESS <hex>} and obeys one command per line of standard input,
 * answering on standard output:
 * <ul>
 *   <li>{@code LANES <hex address>}: the lane trace toward that worker, each line as {@code | line}, then
 *       {@code END};</li>
 *   <li>{@code DESCRIBE}: {@code DESCRIBE <lanes>} of the endpoint the test's connect created here;</li>
 *   <li>{@code REGION <bytes>}: registers a zeroed native region, {@code KEY <hex>};</li>
 *   <li>{@code FILL <offset> <length> <seed>} / {@code CHECK <offset> <length> <seed>}: writes, or compares, the
 *       region's bytes with {@link MessagePlan}'s content of message {@code seed}; {@code FILLED} / {@code CHECKED OK}
 *       or {@code CHECKED <what differs>};</li>
 *   <li>{@code WORD <offset>}: {@code WORD <value>} of the 8-byte word there (volatile read);</li>
 *   <li>{@code ECHO <count>}: sends each of the next {@code count} messages (tag i) back with tag
 *       {@code i | 1 << 62}; {@code ECHOED <count>};</li>
 *   <li>{@code STALL <ms>}: blocks the worker's loop that long (a slow receiver: nothing is read, no credit goes
 *       back); {@code STALLING} once it is blocked;</li>
 *   <li>{@code RECV <count> <size>}: receives, on a thread of its own (commands go on), {@code count} messages
 *       (tag i, {@link MessagePlan}'s content of size {@code size}) in order; {@code RECEIVED OK} or what was
 *       wrong;</li>
 *   <li>{@code COUNTERS}: {@code COUNTERS <protocol counters>} and {@code EMU <emulator counters of this
 *       process>};</li>
 *   <li>{@code END}: unregisters, closes, exits 0 (3 on a leak).</li>
 * </ul>
 */
public final class RdmaWorkerPeer {

    public static void main(String[] args) throws Exception {
        LeakRecorder.install();
        // the emulator's counters are read from the library NUCX_VERBS_LIB names
        System.setProperty("verbs.emu.dir", Path.of(System.getenv("NUCX_VERBS_LIB")).getParent()
                .toString());
        Worker worker = new NucxBootstrap().name("rdma-peer").start();
        System.out.println("ADDRESS " + worker.address().toHex());
        System.out.flush();
        Arena arena = Arena.ofShared();
        MemorySegment region = null;
        RemoteMemoryKey key = null;
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null; ) {
            String[] w = line.split(" ");
            switch (w[0]) {
                case "LANES" -> {
                    for (String l : worker.laneInfo(WorkerAddress.fromHex(w[1]), ErrorMode.PEER).split("\n")) {
                        System.out.println("| " + l);
                    }
                    System.out.println("END");
                }
                case "DESCRIBE" -> {
                    Endpoint ep = worker.endpoints().iterator().next();
                    ep.wireupFuture().get(30, TimeUnit.SECONDS);
                    System.out.println("DESCRIBE " + ep.describeLanes());
                }
                case "REGION" -> {
                    region = arena.allocate(Long.parseLong(w[1]), 4096);
                    key = worker.registerMemory(region);
                    System.out.println("KEY " + key.toHex());
                }
                case "FILL" -> {
                    byte[] b = bytes(Integer.parseInt(w[3]), Integer.parseInt(w[2]));
                    MemorySegment.copy(MemorySegment.ofArray(b), 0, region, Long.parseLong(w[1]), b.length);
                    System.out.println("FILLED");
                }
                case "CHECK" -> {
                    int n = Integer.parseInt(w[2]);
                    byte[] got = region.asSlice(Long.parseLong(w[1]), n).toArray(ValueLayout.JAVA_BYTE);
                    int at = Arrays.mismatch(bytes(Integer.parseInt(w[3]), n), got);
                    System.out.println(at < 0 ? "CHECKED OK" : "CHECKED byte " + at + " of " + n + " differs");
                }
                case "WORD" -> System.out.println("WORD " + (long) ValueLayout.JAVA_LONG.varHandle()
                        .getVolatile(region, Long.parseLong(w[1])));
                case "ECHO" -> {
                    int n = Integer.parseInt(w[1]);
                    for (int i = 0; i < n; i++) {
                        TagMessage m = worker.tagRecv(i, -1L).get(60, TimeUnit.SECONDS);
                        Endpoint back = worker.endpoints().iterator().next();
                        back.tagSend(i | 1L << 62, m.content()).sync();
                    }
                    System.out.println("ECHOED " + n);
                }
                case "STALL" -> {
                    long ms = Long.parseLong(w[1]);
                    CountDownLatch blocked = new CountDownLatch(1);
                    worker.eventLoop().execute(() -> {
                        blocked.countDown();
                        try {
                            Thread.sleep(ms); // the point: a receiver that reads nothing for a while
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                    });
                    blocked.await(30, TimeUnit.SECONDS);
                    System.out.println("STALLING");
                }
                case "RECV" -> {
                    int n = Integer.parseInt(w[1]);
                    int size = Integer.parseInt(w[2]);
                    Thread t = new Thread(() -> System.out.println("RECEIVED " + receive(worker, n, size)), "recv");
                    t.setDaemon(true);
                    t.start(); // commands go on meanwhile (a STALL)
                }
                case "COUNTERS" -> {
                    System.out.println("COUNTERS " + worker.counters().snapshot());
                    System.out.println("EMU " + Arrays.toString(VerbsEmulator.counters()));
                }
                case "END" -> {
                    if (key != null) {
                        worker.unregisterMemory(key);
                    }
                    PeerExit.closeAndExit(worker, 20);
                }
                default -> System.out.println("ERROR unknown command " + line);
            }
            System.out.flush();
        }
        PeerExit.closeAndExit(worker, 20);
    }

    /** Receives {@code n} messages in order (tag i, MessagePlan's content): "OK" or what was wrong. */
    private static String receive(Worker worker, int n, int size) {
        try {
            for (int i = 0; i < n; i++) {
                TagMessage m = worker.tagRecv(0, 0).get(120, TimeUnit.SECONDS);
                try {
                    String why = m.tag() != i ? "message " + i + " arrived with tag " + m.tag()
                            : MessagePlan.check(i, size, m.content());
                    if (why != null) {
                        return why;
                    }
                } finally {
                    m.release();
                }
            }
            return "OK";
        } catch (Exception e) {
            return "failed: " + e;
        }
    }

    /** MessagePlan's content of message {@code seed} at {@code n} bytes, as an array. */
    static byte[] bytes(int seed, int n) {
        var b = MessagePlan.content(seed, n);
        byte[] out = new byte[n];
        b.getBytes(0, out);
        b.release();
        return out;
    }
}
