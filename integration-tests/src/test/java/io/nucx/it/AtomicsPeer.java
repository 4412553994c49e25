package io.nucx.it;

import io.nucx.NucxBootstrap;
import io.nucx.Worker;
import io.nucx.protocol.amo.RemoteMemoryKey;
import io.nucx.transport.testing.LeakRecorder;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The process whose memory the atomics test changes. Registers 64 bytes of native memory, prints
 * {@code ADDRESS <hex>} and {@code KEY <hex>}; on the line {@code READ} from standard input prints
 * {@code WORDS <w0> <w1>} (read with volatile semantics), on {@code END} closes and exits 0 (3 on a leak).
 */
public final class AtomicsPeer {

    public static void main(String[] args) throws Exception {
        LeakRecorder.install();
        Worker worker = new NucxBootstrap().name("atomics-peer").start();
        Arena arena = Arena.ofShared();
        MemorySegment words = arena.allocate(64, 8);
        RemoteMemoryKey key = worker.registerMemory(words);
        System.out.println("ADDRESS " + worker.address().toHex());
        System.out.println("KEY " + key.toHex());
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null; ) {
            if (line.equals("READ")) {
                var vh = ValueLayout.JAVA_LONG.varHandle();
                System.out.println("WORDS " + (long) vh.getVolatile(words, 0L) + " "
                        + (long) vh.getVolatile(words, 8L));
                System.out.flush();
            } else if (line.equals("END")) {
                break;
            }
        }
        worker.unregisterMemory(key);
        PeerExit.closeAndExit(worker, 20);
    }
}
